// argus/kernel/instantiate.hpp -- the definitions of every kernel entry point for float and
// double, for the instruction set this translation unit is compiled for, and that set's
// table of them (compiled_variant()). Include it in exactly ONE translation unit of a
// program whose other TUs define ARGUS_EXTERN_KERNELS, compiled for the same instruction set
// as they are (argus/kernel/instances.hpp says why and how); or, once per instruction set,
// in the translation units of a dispatching kernel library (argus/kernel/dispatcher.hpp).
#pragma once

#if defined(ARGUS_DISPATCH_KERNELS)
#error \
    "argus/kernel/instantiate.hpp defines kernels: compile it without ARGUS_DISPATCH_KERNELS (a program that defines it calls the kernels of a dispatching kernel library)"
#endif

// ARGUS_KERNEL_INSTANTIATE_PART splits the definitions over two translation units that a
// compiler runs side by side (argus_add_kernel_library does): 1 defines the float entry
// points, 2 the double ones and compiled_variant(), whose table reaches the float ones through
// their `extern template` declarations. Undefined: everything in one translation unit.
#if defined(ARGUS_KERNEL_INSTANTIATE_PART)
#if !defined(ARGUS_EXTERN_KERNELS)
#error \
    "ARGUS_KERNEL_INSTANTIATE_PART splits a compiled-once kernel library: define ARGUS_EXTERN_KERNELS too"
#elif ARGUS_KERNEL_INSTANTIATE_PART != 1 && ARGUS_KERNEL_INSTANTIATE_PART != 2
#error "ARGUS_KERNEL_INSTANTIATE_PART is 1 (the float entry points) or 2 (double, and the table)"
#endif
#endif

#include "argus/kernel/instances.hpp"

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

#if !defined(ARGUS_KERNEL_INSTANTIATE_PART) || ARGUS_KERNEL_INSTANTIATE_PART == 1
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_INSTANTIATION, float)
ARGUS_KERNEL_GEMM_INLINED_CALLEES(template, float)
#endif

#if !defined(ARGUS_KERNEL_INSTANTIATE_PART) || ARGUS_KERNEL_INSTANTIATE_PART == 2
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_INSTANTIATION, double)
ARGUS_KERNEL_GEMM_INLINED_CALLEES(template, double)

const kernel_variant& compiled_variant() noexcept {
  static constexpr entry_point_table<float> float_entry_points{
      ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_TABLE_ENTRY, float)};
  static constexpr entry_point_table<double> double_entry_points{
      ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_TABLE_ENTRY, double)};
  static constexpr kernel_variant variant{compiled_isa, &float_entry_points, &double_entry_points};
  return variant;
}
#endif

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
