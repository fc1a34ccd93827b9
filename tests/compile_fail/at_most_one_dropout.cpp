// forward_for_training(m, policy, x, options...): at most one argus::dropout among the
// options (two rates for one call would be ambiguous).
// expect: at_most_one_dropout
// expect: at most one argus::dropout
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void train(const mha& m, const activation& x) {
  (void)argus::forward_for_training(m, argus::fused, x, argus::causal, argus::dropout{0.1, 7});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::forward_for_training(m, argus::fused, x, argus::dropout{0.1, 7},
                                    argus::dropout{0.2, 8});
#endif
}

int main() { return 0; }
