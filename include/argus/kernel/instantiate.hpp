// argus/kernel/instantiate.hpp -- the definitions of every kernel entry point for float and
// double: include it in exactly ONE translation unit of a program whose other TUs define
// ARGUS_EXTERN_KERNELS (argus/kernel/instances.hpp says why and how), compiled with the same
// flags as they are.
#pragma once

#include "argus/kernel/instances.hpp"

namespace argus::kernel {
ARGUS_KERNEL_ENTRY_POINTS(template, float)
ARGUS_KERNEL_ENTRY_POINTS(template, double)
}  // namespace argus::kernel
