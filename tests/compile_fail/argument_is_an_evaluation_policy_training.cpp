// forward_for_training(m, policy, ...) takes argus::fused or argus::unfused as the policy, and
// the tape it gives back for such a call is taken by backward silently: one misuse, one error.
// expect: argument_is_an_evaluation_policy: argus::forward_for_training
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void train(const mha& m, const activation& x, const activation& dout) {
  (void)argus::backward(argus::forward_for_training(m, argus::fused, x), dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  auto tape = argus::forward_for_training(m, 1, x);  // a number, not a policy
  (void)argus::backward(tape, dout, argus::fused);
#endif
}

int main() { return 0; }
