// multi_head_attention(w_q, w_k, w_v, w_o) when h·d_v != d_model: W_o is (h·d_v, d_model).
// The module below has d_model 64, 4 heads of d_k 16 and d_v 8 (examples/08_w_o_shape.cpp):
// merge_heads gives 4·8 = 32 features, so W_o is (32, 64), not the square (64, 64).
// expect: w_o_rows_equal_heads_times_d_v
// expect-clang: '64UL == 4UL \* 8UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 4, argus::mha_options{.d_k = 16, .d_v = 8}>;
template <std::size_t Rows, std::size_t Cols>
using weight = argus::tensor<float, argus::shape<argus::model<Rows>, argus::model<Cols>>>;

void build(const weight<64, 64>& w_q, const weight<64, 64>& w_k, const weight<64, 32>& w_v,
           const weight<32, 64>& w_o, const weight<64, 64>& square) {
  const mha right(w_q, w_k, w_v, w_o);
  (void)right;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha wrong(w_q, w_k, w_v, square);  // W_o has 64 rows, heads · d_v is 32
  (void)wrong;
#else
  (void)square;
#endif
}

int main() { return 0; }
