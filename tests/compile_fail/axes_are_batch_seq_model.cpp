// split_heads<H>(x): x is an activation (batch, seq, model). A (batch, model, seq) tensor
// of the very same sizes is a different thing and is rejected by its axis names.
// expect: axes_are_batch_seq_model
// expect: argus::batch<2>, argus::model<64>, argus::seq<64>
// expect-clang: does not satisfy 'axes_are_batch_seq_model'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<64>, argus::model<64>>>;
using transposed =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::model<64>, argus::seq<64>>>;

void build(const activation& x, const transposed& x_t) {
  (void)argus::split_heads<8>(x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::split_heads<8>(x_t);  // (batch, model, seq): 64 == 64, but the axes differ
#else
  (void)x_t;
#endif
}

int main() { return 0; }
