// ignore_keys(padding): padding is a (batch, seq_kv) key padding mask; a (seq_q, seq_kv)
// mask goes through ignore_where instead.
// expect: axes_are_batch_seq
// expect: argus::seq<16>, argus::seq<12>
// expect-clang: does not satisfy 'axes_are_batch_seq'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using pair_mask = argus::tensor<bool, argus::shape<argus::seq<16>, argus::seq<12>>>;
using padding = argus::tensor<bool, argus::shape<argus::batch<2>, argus::seq<12>>>;

void build(const pair_mask& m, const padding& p) {
  (void)argus::ignore_keys(p);
  (void)argus::ignore_where(m);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::ignore_keys(m);  // a (query, key) mask
#endif
}

int main() { return 0; }
