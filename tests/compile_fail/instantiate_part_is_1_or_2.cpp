// ARGUS_KERNEL_INSTANTIATE_PART names one of the two files of a split kernel library: 1 (the
// float entry points) or 2 (the double ones and the table).
// expect: ARGUS_KERNEL_INSTANTIATE_PART is 1 \(the float entry points\) or 2
// (A quoted include: no precompiled header, which would come before the macros.)
#define ARGUS_EXTERN_KERNELS
#ifdef ARGUS_EXPECT_COMPILE_ERROR
#define ARGUS_KERNEL_INSTANTIATE_PART 3
#else
#define ARGUS_KERNEL_INSTANTIATE_PART 2
#endif
#include "argus/kernel/instantiate.hpp"

int main() { return 0; }
