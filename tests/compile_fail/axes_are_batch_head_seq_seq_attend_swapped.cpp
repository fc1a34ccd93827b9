// attend(p, v): the weights first, the values second; swapped, the axes name the mistake.
// expect: axes_are_batch_head_seq_seq
#include <argus/argus.hpp>

using heads =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<6>, argus::head_dim<6>>>;

void build(const heads& q, const heads& k, const heads& v) {
  auto p = argus::softmax(argus::scores(q, k));
  (void)argus::attend(p, v);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attend(v, p);  // swapped
#endif
}

int main() { return 0; }
