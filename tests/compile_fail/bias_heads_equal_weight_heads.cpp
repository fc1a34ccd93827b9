// project(x, w, b) with a per-head w (head<4>, model<64>, head_dim<16>): b is (head<4>,
// head_dim<16>). A (head<8>, head_dim<8>) b has one entry per column of w too (64), but for
// other heads.
// expect: bias_heads_equal_weight_heads
// expect-gcc: BiasHeads = 8|WeightHeads = 4
// expect-clang: 8UL == 4UL
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;
using per_head_weight =
    argus::tensor<float, argus::shape<argus::head<4>, argus::model<64>, argus::head_dim<16>>>;
using per_head_bias = argus::tensor<float, argus::shape<argus::head<4>, argus::head_dim<16>>>;
using other_heads_bias = argus::tensor<float, argus::shape<argus::head<8>, argus::head_dim<8>>>;

void build(const activation& x, const per_head_weight& w, const per_head_bias& b,
           const other_heads_bias& b8) {
  (void)argus::project(x, w, b);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w, b8);  // 8 heads of 8 for 4 heads of 16
#else
  (void)b8;
#endif
}
