// multi_head_attention: heads · d_k (and the other weights' widths) must fit in a tensor; here
// 2 heads of d_k = 2^63 make a product that wraps to 0 in std::size_t (before, the module
// compiled with a (64, 0) W_q and its forward pass failed an assertion in the gemm).
// expect: module_widths_fit_in_a_tensor
// expect-gcc: satisfaction of .+module_widths_fit_in_a_tensor<DModel
// expect-clang: module_widths_fit_in_a_tensor<64UL
#include <argus/argus.hpp>

#include <cstddef>

using fine = argus::multi_head_attention<64, 2, argus::mha_options{.d_k = 32}>;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
// (A variable, not an alias: every use of an alias of a type whose constraint fails is an
// error of its own.)
argus::multi_head_attention<64, 2, argus::mha_options{.d_k = std::size_t{1} << 63}> wraps;
#endif

int main() { return fine::d_k == 32 ? 0 : 1; }
