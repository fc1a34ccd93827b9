// split_heads<H>(x): H heads of d_k = width / H columns each needs H to divide the width of x.
// expect: heads_divide_width
// expect-clang: '64UL % 7UL == 0'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void build(const activation& x) {
  (void)argus::split_heads<8>(x);  // 64 = 8 * 8
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::split_heads<7>(x);  // 64 % 7 != 0
#endif
}

int main() { return 0; }
