// project(split_heads<H>(x), w): per-head weights (head<G>, model<Din>, head_dim<DK>) applied to
// split input (batch, head<H>, seq, head_dim<Din>) need G == H.
// expect: weight_heads_equal_input_heads
// expect-clang: '4UL == 8UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
template <std::size_t Heads>
using per_head_weight =
    argus::tensor<float, argus::shape<argus::head<Heads>, argus::model<8>, argus::head_dim<8>>>;

void build(const activation& x, const per_head_weight<8>& w, const per_head_weight<4>& w_four) {
  (void)argus::project(argus::split_heads<8>(x), w);  // each head projects its 8 columns
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(argus::split_heads<8>(x), w_four);  // 4 weight heads, 8 input heads
#else
  (void)w_four;
#endif
}

int main() { return 0; }
