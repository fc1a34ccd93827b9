// multi_head_attention<DModel, Heads, {.kv_heads = G}>: each key/value head serves
// Heads / G query heads, so G divides Heads.
// expect: kv_heads_divide_heads
// expect-gcc: Heads = 8
// expect-clang: '8UL % 3UL == 0'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

argus::multi_head_attention<512, 8, argus::mha_options{.kv_heads = 2}> twin;  // 8 = 2 * 4

#ifdef ARGUS_EXPECT_COMPILE_ERROR
argus::multi_head_attention<512, 8, argus::mha_options{.kv_heads = 3}> misuse;  // 8 % 3 != 0
#endif

int main() { return 0; }
