// mask(s, kind): a mask kind of one's own whose constraints fix (seq_q, seq_kv) as (rows,
// cols) has one row per query, as ignore_where does: a kind over a (20, 12) table, on scores of
// 16 queries. The message names the kind's member.
// expect: mask_rows_equal_seq_q
// expect: constraints\.rows
// expect-clang: extents_may_agree<20UL, 16UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

#include <cstddef>
#include <string>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;

template <std::size_t Rows>
struct table_mask {  // ignores the pairs a (Rows, 12) table marks
  using mask_effect = argus::ignores_pairs;
  static constexpr argus::mask_constraints constraints{.rows = Rows, .cols = 12};
  const bool (*table)[12];
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const { return table[i][j]; }
  std::string name() const { return "table_mask"; }
};

void build(const scores& s, const bool (*rows_16)[12], const bool (*rows_20)[12]) {
  (void)argus::mask(s, table_mask<16>{rows_16});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, table_mask<20>{rows_20});  // 20 table rows, 16 queries
#else
  (void)rows_20;
#endif
}

int main() { return 0; }
