// mask(s, ignore_keys(padding)): a (batch, seq_kv) key padding mask has one entry per key.
// expect: padding_length_equals_seq_kv
// expect-clang: extents_may_agree<16UL, 12UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Length>
using padding = argus::tensor<std::uint8_t, argus::shape<argus::batch<2>, argus::seq<Length>>>;

void build(const scores& s, const padding<12>& p, const padding<16>& p_queries) {
  (void)argus::mask(s, argus::ignore_keys(p));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, argus::ignore_keys(p_queries));  // 16 padding entries, 12 keys
#else
  (void)p_queries;
#endif
}

int main() { return 0; }
