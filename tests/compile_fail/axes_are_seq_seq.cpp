// ignore_where(m): m is a (seq_q, seq_kv) mask; a (batch, seq_kv) key padding mask goes
// through ignore_keys instead.
// expect: axes_are_seq_seq
// expect: argus::batch<2>, argus::seq<12>
// expect-clang: does not satisfy 'axes_are_seq_seq'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using pair_mask = argus::tensor<bool, argus::shape<argus::seq<16>, argus::seq<12>>>;
using padding = argus::tensor<bool, argus::shape<argus::batch<2>, argus::seq<12>>>;

void build(const pair_mask& m, const padding& p) {
  (void)argus::ignore_where(m);
  (void)argus::ignore_keys(p);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::ignore_where(p);  // a padding mask
#endif
}

int main() { return 0; }
