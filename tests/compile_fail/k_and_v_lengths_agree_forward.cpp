// multi_head_attention::forward(x_q, x_k, x_v): as many values as keys, when both are static.
// expect: k_and_v_lengths_agree
// expect-clang: extents_may_agree<12UL, 10UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <std::size_t Length>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<Length>, argus::model<64>>>;

void build(const mha& m, const activation<16>& x_q, const activation<12>& x_kv,
           const activation<10>& x_v) {
  (void)m.forward(x_q, x_kv, x_kv);  // 16 queries, 12 keys and values
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x_q, x_kv, x_v);  // 12 keys, 10 values
#else
  (void)x_v;
#endif
}

int main() { return 0; }
