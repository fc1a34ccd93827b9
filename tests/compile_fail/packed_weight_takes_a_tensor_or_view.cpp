// argus::packed_weight(w) copies and packs a weight held in a tensor or a tensor_view; an
// expression (here x·W) has no elements yet: evaluate it into a tensor first. The rejected
// packed_weight then used in an expression adds no second error (before, project() reported
// axes_are_a_stacked_or_per_head_weight of it too).
// expect: packed_weight_takes_a_tensor_or_view
// expect-gcc: W = argus::projection<
// expect-clang: packed_weight<argus::projection<
#include <argus/argus.hpp>
#include <argus/eval/packed_weight.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const activation& x, const weight& w) {
  const argus::packed_weight packed(w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::packed_weight misuse(argus::project(x, w));  // an expression, not a weight
  (void)argus::evaluate(argus::project(x, misuse), argus::fused);
#endif
  (void)argus::evaluate(argus::project(x, packed), argus::fused);
}

int main() { return 0; }
