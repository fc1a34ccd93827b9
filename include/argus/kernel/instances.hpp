// argus/kernel/instances.hpp -- kernel layer: the kernels' entry points, compiling them once
// for a whole program, and choosing their instruction set at run time.
//
// The kernels are function templates over the value type, and instantiating them is most of
// what a translation unit that evaluates attention costs to compile: every TU that calls
// evaluate() compiles the fused loop nest for each d_k/d_v fast path, the blocked gemm with
// its micro-kernels, the softmax and (with training) both backward passes, for float and for
// double. ARGUS_KERNEL_ENTRY_POINTS lists the entry points; a program uses the list one of
// three ways:
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
// With CMake, argus_add_kernel_library(<name>) (cmake/argusKernels.cmake, also available
// after find_package(argus)) makes the compiled-once library, argus_add_kernel_library(<name>
// DISPATCH) the dispatching one; either passes its macro to every target that links it:
//
//     argus_add_kernel_library(my_argus_kernels)
//     target_compile_options(my_argus_kernels PRIVATE -march=native)  # as the programs
//     target_link_libraries(my_program PRIVATE my_argus_kernels)
//
// argus's own tests link a compiled-once library (tests/CMakeLists.txt); its examples and
// benchmarks do not, unless configured so (cmake/argus_dev.cmake).
//
// Adding a kernel entry point: one line in ARGUS_KERNEL_ENTRY_POINTS.
#pragma once

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/isa.hpp"
#include "argus/kernel/softmax_rows.hpp"

#include <cstddef>
#include <span>
#include <type_traits>

/// Every kernel entry point for value type T, as X(T, return type, name, (parameters),
/// (arguments)): each is the function template argus::kernel::name<T>, whose parameters are
/// written once here with names, so that a dispatcher can forward them. The names are those
/// of the templates' own declarations; default arguments stay there.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ARGUS_KERNEL_ENTRY_POINTS(X, T)                                                   \
  X(T, void, flash_attention, (const attention_problem<T>& p), (p))                       \
  X(T, void, attention_unfused, (const attention_problem<T>& p), (p))                     \
  X(T, void, flash_attention_backward, (const attention_backward_problem<T>& bp), (bp))   \
  X(T, void, attention_backward_unfused, (const attention_backward_problem<T>& bp), (bp)) \
  X(T, void, gemm_nn,                                                                     \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,   \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate), \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate))                           \
  X(T, void, gemm_nt,                                                                     \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,   \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate), \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate))                           \
  X(T, void, softmax_rows, (T * s, std::size_t rows, std::size_t cols, std::size_t lds),  \
    (s, rows, cols, lds))                                                                 \
  X(T, flash_tiles, flash_attention_tiles, (const attention_problem<T>& p), (p))          \
  X(T, std::size_t, flash_attention_scratch_bytes, (const attention_problem<T>& p), (p))

/// The templates the entry points call that a compiler may instantiate while inlining an
/// entry point declared `extern template`: declared with them, after PREFIX (`extern
/// template` or `template`). Only the compiled-once mode needs them: a dispatched entry point
/// has no body a TU could inline.
#define ARGUS_KERNEL_INLINED_CALLEES(PREFIX, T)                                                    \
  PREFIX void detail::gemm<false, T>(std::size_t, std::size_t, std::size_t, T, const T*,           \
                                     std::size_t, const T*, std::size_t, T*, std::size_t,          \
                                     const T*, bool);                                              \
  PREFIX void detail::gemm<true, T>(std::size_t, std::size_t, std::size_t, T, const T*,            \
                                    std::size_t, const T*, std::size_t, T*, std::size_t, const T*, \
                                    bool);

// The declarations each mode makes of one entry point (X of ARGUS_KERNEL_ENTRY_POINTS).
#define ARGUS_KERNEL_EXTERN_TEMPLATE(T, R, NAME, PARAMS, ARGS) extern template R NAME<T> PARAMS;
#define ARGUS_KERNEL_INSTANTIATION(T, R, NAME, PARAMS, ARGS) template R NAME<T> PARAMS;
#define ARGUS_KERNEL_SPECIALIZATION(T, R, NAME, PARAMS, ARGS) \
  template <>                                                 \
  R NAME<T> PARAMS;
#define ARGUS_KERNEL_TABLE_SLOT(T, R, NAME, PARAMS, ARGS) R(*NAME) PARAMS = nullptr;
#define ARGUS_KERNEL_TABLE_ENTRY(T, R, NAME, PARAMS, ARGS) .NAME = &NAME<T>,
// NOLINTEND(bugprone-macro-parentheses)

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

// The declarations are made in the templates' own namespace (Clang 14 drops the primary
// template's default arguments for an explicit specialization declared from argus::kernel).
namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

#if defined(ARGUS_DISPATCH_KERNELS)
// Every entry point is an explicit specialization, defined by the dispatching kernel library,
// that calls the active variant's table: no TU of the program instantiates a kernel.
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_SPECIALIZATION, float)
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_SPECIALIZATION, double)
#elif defined(ARGUS_EXTERN_KERNELS)
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_EXTERN_TEMPLATE, float)
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_EXTERN_TEMPLATE, double)
ARGUS_KERNEL_INLINED_CALLEES(extern template, float)
ARGUS_KERNEL_INLINED_CALLEES(extern template, double)
#endif

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
