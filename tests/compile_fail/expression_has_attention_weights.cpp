// attention_weights(y) finds the softmax of an attention expression; a projection has none
// (before, only a candidate's requires-clause named the rule, on GCC).
// expect: expression_has_attention_weights: argus::attention_weights
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;
using weight = argus::tensor<float, argus::shape<argus::model<32>, argus::model<32>>>;

void draw(const activation& x, const weight& w) {
  argus::multi_head_attention<32, 4> m;
  (void)argus::attention_weights(m.forward(x));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attention_weights(argus::project(x, w));  // no attention in it
#else
  (void)w;
#endif
}

int main() { return 0; }
