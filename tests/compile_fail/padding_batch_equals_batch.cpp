// mask(s, ignore_keys(padding)): a (batch, seq_kv) key padding mask has one row per batch item.
// expect: padding_batch_equals_batch
// expect-clang: extents_may_agree<3UL, 2UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Batch>
using padding = argus::tensor<std::uint8_t, argus::shape<argus::batch<Batch>, argus::seq<12>>>;

void build(const scores& s, const padding<2>& p, const padding<3>& p_other) {
  (void)argus::mask(s, argus::ignore_keys(p));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, argus::ignore_keys(p_other));  // padding for 3 items, batch of 2
#else
  (void)p_other;
#endif
}

int main() { return 0; }
