// mask(s, ignore_where(m)): a (seq_q, seq_kv) mask has one row per query.
// expect: mask_rows_equal_seq_q
// expect-clang: extents_may_agree<20UL, 16UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Rows>
using pair_mask = argus::tensor<bool, argus::shape<argus::seq<Rows>, argus::seq<12>>>;

void build(const scores& s, const pair_mask<16>& m, const pair_mask<20>& m_tall) {
  (void)argus::mask(s, argus::ignore_where(m));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, argus::ignore_where(m_tall));  // 20 mask rows, 16 queries
#else
  (void)m_tall;
#endif
}

int main() { return 0; }
