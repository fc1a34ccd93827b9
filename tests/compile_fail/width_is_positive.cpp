// multi_head_attention<DModel, Heads>: every width of the configuration is at least 1.
// expect: width_is_positive
// expect-clang: 0UL does not satisfy 'width_is_positive'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

argus::multi_head_attention<512, 8> twin;

#ifdef ARGUS_EXPECT_COMPILE_ERROR
argus::multi_head_attention<512, 0> misuse;  // no heads
#endif

int main() { return 0; }
