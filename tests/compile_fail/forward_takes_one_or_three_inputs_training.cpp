// forward_for_training(m, policy, inputs..., options...) takes the inputs of m.forward: (x) or
// (x_q, x_k, x_v). With two, m.forward's rule is the error (it was "does not satisfy
// training_options", the second input taken for an option).
// expect: forward_takes_one_or_three_inputs
// expect-gcc: Inputs = 2
// expect-clang: 2UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void train(const mha& m, const activation& x) {
  (void)argus::forward_for_training(m, argus::fused, x, argus::causal);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::forward_for_training(m, argus::fused, x, x, argus::causal);  // two inputs
#endif
}
