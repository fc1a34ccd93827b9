// mask(s, ignore_where(m)): a (seq_q, seq_kv) mask has one column per key.
// expect: mask_cols_equal_seq_kv
// expect-clang: extents_may_agree<16UL, 12UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Cols>
using pair_mask = argus::tensor<bool, argus::shape<argus::seq<16>, argus::seq<Cols>>>;

void build(const scores& s, const pair_mask<12>& m, const pair_mask<16>& m_square) {
  (void)argus::mask(s, argus::ignore_where(m));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, argus::ignore_where(m_square));  // 16 mask columns, 12 keys
#else
  (void)m_square;
#endif
}

int main() { return 0; }
