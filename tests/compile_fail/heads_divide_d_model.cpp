// multi_head_attention<DModel, Heads>: d_k = DModel / Heads needs Heads to divide DModel.
// expect: heads_divide_d_model
// expect-gcc: DModel = 512
// expect-clang: '512UL % \(true \? 7UL : 1\) == 0'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

argus::multi_head_attention<512, 8> twin;  // 512 = 8 * 64

#ifdef ARGUS_EXPECT_COMPILE_ERROR
argus::multi_head_attention<512, 7> misuse;  // 512 % 7 != 0
#endif

int main() { return 0; }
