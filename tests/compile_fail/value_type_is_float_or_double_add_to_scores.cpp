// add_to_scores(a): an additive mask holds float or double logits (-infinity ignores a key).
// expect: value_type_is_float_or_double
// expect-clang: int.* does not satisfy 'value_type_is_float_or_double'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using pair_shape = argus::shape<argus::seq<16>, argus::seq<12>>;  // (seq_q, seq_kv)

void build(const argus::tensor<float, pair_shape>& bias,
           const argus::tensor<int, pair_shape>& counts) {
  (void)argus::add_to_scores(bias);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::add_to_scores(counts);  // int logits
#else
  (void)counts;
#endif
}

int main() { return 0; }
