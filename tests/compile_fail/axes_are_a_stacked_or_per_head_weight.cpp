// project(x, w): W is stacked (model, model) or per head (head, model, head_dim). An
// activation-shaped (seq, model) tensor of the same sizes is neither.
// expect: axes_are_a_stacked_or_per_head_weight
// expect: argus::seq<64>, argus::model<64>
// expect-clang: does not satisfy 'axes_are_a_stacked_or_per_head_weight'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using not_a_weight = argus::tensor<float, argus::shape<argus::seq<64>, argus::model<64>>>;

void build(const activation& x, const weight& w, const not_a_weight& y) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, y);  // (seq, model) is not a weight
#else
  (void)y;
#endif
}

int main() { return 0; }
