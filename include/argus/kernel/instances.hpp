// argus/kernel/instances.hpp -- kernel layer: the kernels' entry points, and compiling them
// once for a whole program.
//
// The kernels are function templates over the value type, and instantiating them is most of
// what a translation unit that evaluates attention costs to compile: every TU that calls
// evaluate() compiles the fused loop nest for each d_k/d_v fast path, the blocked gemm with
// its micro-kernels, the softmax and (with training) both backward passes, for float and for
// double. A program of many TUs can compile them once:
//
//   - define ARGUS_EXTERN_KERNELS in every TU: this header then declares each entry point
//     below `extern template` for float and double, so no TU instantiates it;
//   - include <argus/kernel/instantiate.hpp> in exactly one TU (it defines them), compiled
//     with the same flags as the others (the same -march above all: kernel/simd.hpp picks
//     the instruction set at compile time).
//
// With CMake, argus_add_kernel_library(<name>) (cmake/argusKernels.cmake, also available
// after find_package(argus)) makes that TU a static library which carries the definition:
//
//     argus_add_kernel_library(my_argus_kernels)
//     target_compile_options(my_argus_kernels PRIVATE -march=native)  # as the programs
//     target_link_libraries(my_program PRIVATE my_argus_kernels)
//
// Without ARGUS_EXTERN_KERNELS nothing changes: argus stays header-only. argus's own tests
// link such a library (tests/CMakeLists.txt); its examples and benchmarks do not.
//
// Adding a kernel entry point: one line in ARGUS_KERNEL_ENTRY_POINTS.
#pragma once

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/softmax_rows.hpp"

#include <cstddef>

/// Every kernel entry point for value type T, each declared after PREFIX (`extern template`
/// or `template`). PREFIX and T are a declaration's keywords and a type name, which no
/// parentheses may enclose.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ARGUS_KERNEL_ENTRY_POINTS(PREFIX, T)                                                       \
  PREFIX void flash_attention<T>(const attention_problem<T>&);                                     \
  PREFIX void attention_unfused<T>(const attention_problem<T>&);                                   \
  PREFIX void flash_attention_backward<T>(const attention_backward_problem<T>&);                   \
  PREFIX void attention_backward_unfused<T>(const attention_backward_problem<T>&);                 \
  PREFIX void gemm_nn<T>(std::size_t, std::size_t, std::size_t, T, const T*, std::size_t,          \
                         const T*, std::size_t, T*, std::size_t, const T*, bool);                  \
  PREFIX void gemm_nt<T>(std::size_t, std::size_t, std::size_t, T, const T*, std::size_t,          \
                         const T*, std::size_t, T*, std::size_t, const T*, bool);                  \
  PREFIX void detail::gemm<false, T>(std::size_t, std::size_t, std::size_t, T, const T*,           \
                                     std::size_t, const T*, std::size_t, T*, std::size_t,          \
                                     const T*, bool);                                              \
  PREFIX void detail::gemm<true, T>(std::size_t, std::size_t, std::size_t, T, const T*,            \
                                    std::size_t, const T*, std::size_t, T*, std::size_t, const T*, \
                                    bool);                                                         \
  PREFIX void softmax_rows<T>(T*, std::size_t, std::size_t, std::size_t) noexcept;
// NOLINTEND(bugprone-macro-parentheses)

#ifdef ARGUS_EXTERN_KERNELS
namespace argus::kernel {
ARGUS_KERNEL_ENTRY_POINTS(extern template, float)
ARGUS_KERNEL_ENTRY_POINTS(extern template, double)
}  // namespace argus::kernel
#endif
