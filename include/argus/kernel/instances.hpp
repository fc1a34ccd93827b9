// argus/kernel/instances.hpp -- kernel layer: the kernels' entry points, compiling them once
// for a whole program, and choosing their instruction set at run time.
//
// The kernels are function templates over the value type, and instantiating them is most of
// what a translation unit that evaluates attention costs to compile: every TU that calls
// evaluate() compiles the fused loop nest, the blocked gemm with its micro-kernels, the
// softmax and (with training) both backward passes, for float and for double.
// ARGUS_KERNEL_ENTRY_POINTS (kernel/entry_points.hpp) lists the entry points, and each kernel
// header declares its own for one of three ways a program uses them:
//
//   - header-only (no macro): every TU instantiates what it calls, for the instruction set
//     it is compiled for (kernel/isa.hpp);
//   - compiled once (ARGUS_EXTERN_KERNELS in every TU): each entry point is declared
//     `extern template` for float and double, and one TU that includes
//     <argus/kernel/instantiate.hpp> defines them, compiled for the same instruction set as
//     the others (a mismatch no longer breaks the One Definition Rule: it fails to link,
//     naming the missing argus::kernel::<set>:: function);
//   - dispatched (ARGUS_DISPATCH_KERNELS in every TU): each entry point is declared an explicit
//     specialization that calls through a table of function pointers, and a dispatching
//     kernel library holds one table per instruction set and picks one at the first call
//     (<argus/kernel/dispatcher.hpp>; docs/explanation/isa_dispatch.md).
//
// This header adds the tables (entry_point_table, kernel_variant) and, in a dispatching
// program, the functions that say which set runs.
//
// With CMake, argus_add_kernel_library(<name>) (cmake/argusKernels.cmake, also available
// after find_package(argus)) makes the compiled-once library, argus_add_kernel_library(<name>
// DISPATCH) the dispatching one; either passes its macro to every target that links it:
//
//     argus_add_kernel_library(my_argus_kernels)
//     target_compile_options(my_argus_kernels PRIVATE -march=native)  # as the programs
//     target_link_libraries(my_program PRIVATE my_argus_kernels)
//
// argus's own tests, examples and smoke benchmarks link a compiled-once library
// (cmake/argus_dev.cmake); the `release` preset's benchmarks are header-only, or link a
// dispatching one with ARGUS_KERNEL_DISPATCH.
//
// Adding a kernel entry point: one line in ARGUS_KERNEL_ENTRY_POINTS, in the group of its
// header (kernel/entry_points.hpp).
#pragma once

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/isa.hpp"
#include "argus/kernel/softmax_rows.hpp"

#include <cstddef>
#include <span>
#include <type_traits>

namespace argus::kernel {

/// One instruction set's entry points for value type T: a pointer to each, named after it.
template <class T>
struct entry_point_table {
  ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_TABLE_SLOT, T)
};

/// The kernels of one instruction set, as compiled into a kernel library.
struct kernel_variant {
  isa id;
  const entry_point_table<float>* float_entry_points;
  const entry_point_table<double>* double_entry_points;

  /// The entry points for value type T (float or double).
  template <class T>
  const entry_point_table<T>& entry_points() const noexcept {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "argus::kernel::kernel_variant::entry_points<T> is defined for float and double");
    if constexpr (std::is_same_v<T, float>)
      return *float_entry_points;
    else
      return *double_entry_points;
  }
};

}  // namespace argus::kernel

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

#if defined(ARGUS_DISPATCH_KERNELS)
/// The variants the dispatching kernel library holds, slowest first (portable, as a rule,
/// then avx2, then avx512), whether or not this CPU can run them.
std::span<const kernel_variant> kernel_variants() noexcept;

/// The variant the entry points run (active_isa() is its id): at the first call, the one
/// ARGUS_ISA names, or else the fastest this CPU runs; then fixed for the process. Throws
/// isa_error when ARGUS_ISA cannot be honoured, at this and every later call.
const kernel_variant& active_variant();
#else
/// This translation unit's instruction set's entry points, as a kernel library holds them:
/// defined by <argus/kernel/instantiate.hpp>.
const kernel_variant& compiled_variant() noexcept;
#endif

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
