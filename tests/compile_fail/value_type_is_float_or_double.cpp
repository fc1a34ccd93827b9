// multi_head_attention<DModel, Heads, Options, T>: argus computes in float or double.
// expect: value_type_is_float_or_double
// expect-clang: int.* does not satisfy 'value_type_is_float_or_double'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

argus::multi_head_attention<512, 8, argus::mha_options{}, double> twin;

#ifdef ARGUS_EXPECT_COMPILE_ERROR
argus::multi_head_attention<512, 8, argus::mha_options{}, int> misuse;
#endif

int main() { return 0; }
