// forward_for_training(e, policy, options...) of an attention core expression: its options are
// at most one argus::dropout; a mask belongs in e (before, this matched no overload).
// expect: expression_options_are_dropouts
#include <argus/argus.hpp>

using split = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<4>, argus::seq<8>, argus::head_dim<16>>>;

void train(const split& q, const split& k, const split& v) {
  (void)argus::forward_for_training(
      argus::attend(argus::softmax(argus::mask(argus::scores(q, k), argus::causal)), v),
      argus::fused, argus::dropout{0.1, 7});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::forward_for_training(argus::attend(argus::softmax(argus::scores(q, k)), v),
                                    argus::fused, argus::causal);  // the mask after e
#endif
}

int main() { return 0; }
