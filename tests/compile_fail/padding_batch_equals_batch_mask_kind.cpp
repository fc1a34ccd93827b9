// mask(s, kind): a mask kind of one's own whose constraints fix (batch, seq_kv) as a key
// padding mask's (padding_batch, padding_keys) has one row per batch item, as ignore_keys
// does: a kind over a (3, 12) table of padded keys, on scores of a batch of 2. The message
// names the kind's member.
// expect: padding_batch_equals_batch
// expect: constraints\.padding_batch
// expect-clang: extents_may_agree<3UL, 2UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

#include <cstddef>
#include <string>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;

template <std::size_t Batch>
struct padded_keys {  // ignores the keys a (Batch, 12) table marks as padding
  using mask_effect = argus::ignores_pairs;
  static constexpr argus::mask_constraints constraints{.padding_batch = Batch, .padding_keys = 12};
  const bool (*padding)[12];
  bool ignores(std::size_t b, std::size_t, std::size_t, std::size_t j) const {
    return padding[b][j];
  }
  std::string name() const { return "padded_keys"; }
};

void build(const scores& s, const bool (*batch_2)[12], const bool (*batch_3)[12]) {
  (void)argus::mask(s, padded_keys<2>{batch_2});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(s, padded_keys<3>{batch_3});  // padding for 3 items, batch of 2
#else
  (void)batch_3;
#endif
}

int main() { return 0; }
