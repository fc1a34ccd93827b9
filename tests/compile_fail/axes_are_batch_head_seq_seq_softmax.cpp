// softmax(s): s is scores (batch, head, seq_q, seq_kv); split heads (batch, head, seq, head_dim)
// of equal sizes are rejected by their axes.
// expect: axes_are_batch_head_seq_seq
// expect-gcc: head_dim<6>
// expect-clang: head_dim<6>
#include <argus/argus.hpp>

using heads =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<6>, argus::head_dim<6>>>;

void build(const heads& q, const heads& k) {
  (void)argus::softmax(argus::scores(q, k));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::softmax(q);  // (batch, head, seq, head_dim), 6 x 6
#endif
}

int main() { return 0; }
