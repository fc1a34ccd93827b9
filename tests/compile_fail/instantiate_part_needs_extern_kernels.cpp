// A kernel library split over two files (ARGUS_KERNEL_INSTANTIATE_PART) declares the other
// part's entry points extern: its files need ARGUS_EXTERN_KERNELS too.
// expect: ARGUS_KERNEL_INSTANTIATE_PART splits a compiled-once kernel library
// expect: define ARGUS_EXTERN_KERNELS too
// (A quoted include: no precompiled header, which would come before the macros.)
#ifndef ARGUS_EXPECT_COMPILE_ERROR
#define ARGUS_EXTERN_KERNELS
#endif
#define ARGUS_KERNEL_INSTANTIATE_PART 1
#include "argus/kernel/instantiate.hpp"

int main() { return 0; }
