// project(x, w): x is an activation (batch, seq, model) or split heads (batch, head, seq,
// head_dim). Scores (batch, head, seq, seq) are neither.
// expect: axes_are_an_activation_or_split_heads
// expect: argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<64>
// expect-clang: does not satisfy 'axes_are_an_activation_or_split_heads'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const activation& x, const scores& s, const weight& w) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(s, w);  // scores are not an input of a projection
#else
  (void)s;
#endif
}

int main() { return 0; }
