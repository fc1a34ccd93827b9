// multi_head_attention(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o): b_q has heads · d_k entries.
// The module below has d_model 64, 8 heads of d_k = d_v = 8, 2 key/value heads, kdim 32, vdim 48:
// b_q (8·8), b_k (2·8), b_v (2·8), b_o (64).
// expect: b_q_length_equals_heads_times_d_k
// expect-clang: '48UL == 8UL \* 8UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha =
    argus::multi_head_attention<64, 8, argus::mha_options{.kv_heads = 2, .kdim = 32, .vdim = 48}>;
template <std::size_t Rows, std::size_t Cols>
using weight = argus::tensor<float, argus::shape<argus::model<Rows>, argus::model<Cols>>>;
template <std::size_t Length>
using bias = argus::tensor<float, argus::shape<argus::model<Length>>>;

void build(const weight<64, 64>& w_q, const weight<32, 16>& w_k, const weight<48, 16>& w_v,
           const weight<64, 64>& w_o, const bias<64>& b_q, const bias<16>& b_k, const bias<16>& b_v,
           const bias<64>& b_o, const bias<48>& bad) {
  const mha twin(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o);
  (void)twin;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha misuse(w_q, w_k, w_v, w_o, bad, b_k, b_v,
                   b_o);  // b_q has 48 entries, heads · d_k is 64
  (void)misuse;
#else
  (void)bad;
#endif
}

int main() { return 0; }
