// multi_head_attention(w_q, w_k, w_v, w_o): W_q has d_model rows.
// The module below has d_model 64, 8 heads of d_k = d_v = 8, 2 key/value heads, kdim 32, vdim 48:
// W_q (64, 8·8), W_k (32, 2·8), W_v (48, 2·8), W_o (8·8, 64).
// expect: w_q_rows_equal_d_model
// expect-clang: '32UL == 64UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha =
    argus::multi_head_attention<64, 8, argus::mha_options{.kv_heads = 2, .kdim = 32, .vdim = 48}>;
template <std::size_t Rows, std::size_t Cols>
using weight = argus::tensor<float, argus::shape<argus::model<Rows>, argus::model<Cols>>>;

void build(const weight<64, 64>& w_q, const weight<32, 16>& w_k, const weight<48, 16>& w_v,
           const weight<64, 64>& w_o, const weight<32, 64>& bad) {
  const mha twin(w_q, w_k, w_v, w_o);
  (void)twin;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha misuse(bad, w_k, w_v, w_o);  // W_q has 32 rows, d_model is 64
  (void)misuse;
#else
  (void)bad;
#endif
}

int main() { return 0; }
