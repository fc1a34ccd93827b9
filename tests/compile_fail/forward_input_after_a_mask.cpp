// multi_head_attention::forward(x_q, x_k, x_v, masks...): a mask in an input's position is
// reported as a misplaced argument, not as an input of the wrong type.
// expect: argument_is_a_mask
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void build(const mha& m, const activation& x) {
  (void)m.forward(x, x, x, argus::causal);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, argus::causal, x);  // the mask where x_k goes
#endif
}

int main() { return 0; }
