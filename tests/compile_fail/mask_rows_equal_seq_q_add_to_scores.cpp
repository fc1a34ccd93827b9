// mask(s, add_to_scores(a)): an additive (seq_q, seq_kv) mask has one row per query.
// expect: mask_rows_equal_seq_q
// expect-clang: extents_may_agree<20UL, 16UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Rows>
using additive = argus::tensor<float, argus::shape<argus::seq<Rows>, argus::seq<12>>>;

void build(const scores& s, const additive<16>& a, const additive<20>& a_tall) {
  (void)argus::mask(s, argus::add_to_scores(a));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, argus::add_to_scores(a_tall));  // 20 mask rows, 16 queries
#else
  (void)a_tall;
#endif
}

int main() { return 0; }
