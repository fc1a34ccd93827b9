// forward_for_training(m, policy, inputs..., options...): after the inputs come only options,
// masks and at most one argus::dropout; a number among them is neither (before the entry
// point was one, such a call matched no overload: "does not satisfy training_options").
// expect: options_follow_inputs
// expect: after the inputs come only masks and at most one argus::dropout
// expect-gcc: forward_for_training
// expect-clang: forward_for_training
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void train(const mha& m, const activation& x) {
  (void)argus::forward_for_training(m, argus::fused, x, argus::causal, argus::dropout{0.1, 7});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::forward_for_training(m, argus::fused, x, argus::causal, 0.1);  // a bare rate
#endif
}
