// multi_head_attention::forward takes (x, masks...) or (x_q, x_k, x_v, masks...).
// expect: forward_takes_one_or_three_inputs
// expect-gcc: Inputs = 2
// expect-clang: 2UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void build(const mha& m, const activation& x) {
  (void)m.forward(x, argus::causal);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x, argus::causal);  // x_q and x_k, no x_v
#endif
}

int main() { return 0; }
