// scores(q, k): queries and keys are split heads (batch, head, seq, head_dim); an activation
// (batch, seq, model) is not, even though split_heads would make one of it.
// expect: axes_are_batch_head_seq_head_dim
// expect: argus::batch<2>, argus::seq<16>, argus::model<64>
// expect-clang: does not satisfy 'axes_are_batch_head_seq_head_dim'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void build(const activation& x) {
  (void)argus::scores(argus::split_heads<8>(x), argus::split_heads<8>(x));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(x, argus::split_heads<8>(x));  // queries not split into heads
#endif
}

int main() { return 0; }
