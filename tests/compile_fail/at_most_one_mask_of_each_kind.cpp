// forward_for_training(m, policy, x, options...): at most one mask of each kind (two
// ignore_keys masks here); the backward pass's fused kernel takes one of each.
// expect: at_most_one_mask_of_each_kind
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using keys = argus::tensor<bool, argus::shape<argus::batch<2>, argus::seq<16>>>;

void train(const mha& m, const activation& x, const activation& dout, const keys& padding,
           const keys& more) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto tape = argus::forward_for_training(m, argus::fused, x, argus::ignore_keys(padding),
                                                argus::ignore_keys(more));
#else
  const auto tape =
      argus::forward_for_training(m, argus::fused, x, argus::causal, argus::ignore_keys(padding));
  (void)more;
#endif
  (void)argus::backward(tape, dout, argus::fused);
}

int main() { return 0; }
