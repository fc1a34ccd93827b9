// project(x, w, b) with a stacked w (model<64>, model<64>): b is (model<64>); a per-head
// (head<4>, head_dim<16>) b, 64 entries too, is the other form's bias.
// expect: axes_are_a_bias
// expect-gcc: S = argus::shape<argus::head<4>, argus::head_dim<16> >
// expect-clang: axes_are_a_bias<shape_of<.*shape<argus::head<4>, argus::head_dim<16> >
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using bias = argus::tensor<float, argus::shape<argus::model<64>>>;
using per_head_bias = argus::tensor<float, argus::shape<argus::head<4>, argus::head_dim<16>>>;

void build(const activation& x, const weight& w, const bias& b, const per_head_bias& bh) {
  (void)argus::project(x, w, b);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w, bh);  // (head, head_dim) beside a stacked w
#else
  (void)bh;
#endif
}
