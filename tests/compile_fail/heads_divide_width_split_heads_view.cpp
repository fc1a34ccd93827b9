// split_heads_view<H>(v): the (batch, head, seq, head_dim) view of a (batch, seq, model) view
// needs H to divide the width.
// expect: heads_divide_width
// expect-clang: '64UL % 7UL == 0'
// expect-gcc: Heads = 7; Width = 64
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void build(const activation& x) {
  (void)argus::split_heads_view<8>(x.view());  // 64 = 8 * 8
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::split_heads_view<7>(x.view());  // 64 % 7 != 0
#endif
}

int main() { return 0; }
