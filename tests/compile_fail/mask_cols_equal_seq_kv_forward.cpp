// multi_head_attention::forward(x_q, x_k, x_v, masks...): a static (seq_q, seq_kv) mask has one
// column per key, checked at forward's boundary.
// expect: mask_cols_equal_seq_kv
// expect-clang: extents_may_agree<6UL, 7UL>
// expect-gcc: MaskCols = 6
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<16, 4>;
template <std::size_t Length>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<Length>, argus::model<16>>>;
template <std::size_t Cols>
using pair_mask = argus::tensor<bool, argus::shape<argus::seq<5>, argus::seq<Cols>>>;

void build(const mha& m, const activation<5>& x_q, const activation<7>& x_kv,
           const pair_mask<7>& mask, const pair_mask<6>& mask_narrow) {
  (void)m.forward(x_q, x_kv, x_kv, argus::ignore_where(mask));  // 5 queries, 7 keys
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x_q, x_kv, x_kv, argus::ignore_where(mask_narrow));  // 6 mask columns, 7 keys
#else
  (void)mask_narrow;
#endif
}

int main() { return 0; }
