// multi_head_attention::forward(x, masks...): the one-input form checks its masks as the
// three-input form does: a (seq_q, seq_kv) mask has one column per key.
// expect: mask_cols_equal_seq_kv
// expect-gcc: Cols = 9|SeqKV = 9|MaskCols = 9
// expect-clang: 9UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<9>, argus::model<32>>>;
template <std::size_t Cols>
using pair_mask = argus::tensor<bool, argus::shape<argus::seq<9>, argus::seq<Cols>>>;

void build(const mha& m, const activation& x, const pair_mask<9>& fits,
           const pair_mask<8>& narrow) {
  (void)m.forward(x, argus::ignore_where(fits));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, argus::ignore_where(narrow));  // 8 mask columns, 9 keys
#else
  (void)narrow;
#endif
}

int main() { return 0; }
