// argus/kernel/entry_points.hpp -- kernel layer: the list of the kernels' entry points, and
// how each kernel header declares its own for the way the program uses the kernels
// (argus/kernel/instances.hpp has the three ways).
//
// ARGUS_KERNEL_ENTRY_POINTS lists every entry point, one line each,
//     X(T, return type, name, (parameters, named), (arguments))
// for the function template argus::kernel::name<T>, in groups named after the header that
// defines them. Each of those headers ends with
//     ARGUS_KERNEL_DECLARE_ENTRY_POINTS(<its group>)
// which declares its entry points, for float and double, `extern template`
// (ARGUS_EXTERN_KERNELS) or as explicit specializations that a dispatching kernel library
// defines (ARGUS_DISPATCH_KERNELS), and nothing in a header-only program. So a file that
// includes one kernel header alone, as a benchmark of one kernel does, calls the library's
// kernels too, never a copy of its own (in a dispatching program that copy would be compiled
// for the program's baseline target, silently).
#pragma once

// The entry points, grouped by the header that defines them; each group is expanded at the end
// of its header. A new entry point is one line in its header's group.
// NOLINTBEGIN(bugprone-macro-parentheses)

// kernel/flash_attention.hpp. The plan queries are entry points too: tiles and scratch depend
// on the register width, and explain() must report those of the instruction set that runs.
#define ARGUS_KERNEL_FLASH_ATTENTION_ENTRY_POINTS(X, T)                          \
  X(T, void, flash_attention, (const attention_problem<T>& p), (p))              \
  X(T, flash_tiles, flash_attention_tiles, (const attention_problem<T>& p), (p)) \
  X(T, std::size_t, flash_attention_scratch_bytes, (const attention_problem<T>& p), (p))

// kernel/attention_backward.hpp
#define ARGUS_KERNEL_ATTENTION_BACKWARD_ENTRY_POINTS(X, T)            \
  X(T, void, attention_unfused, (const attention_problem<T>& p), (p)) \
  X(T, void, attention_backward_unfused, (const attention_backward_problem<T>& bp), (bp))

// kernel/flash_attention_backward.hpp
#define ARGUS_KERNEL_FLASH_ATTENTION_BACKWARD_ENTRY_POINTS(X, T) \
  X(T, void, flash_attention_backward, (const attention_backward_problem<T>& bp), (bp))

// kernel/gemm.hpp
#define ARGUS_KERNEL_GEMM_ENTRY_POINTS(X, T)                                                      \
  X(T, void, gemm_nn,                                                                             \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,           \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate),         \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate))                                   \
  X(T, void, gemm_nt,                                                                             \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,           \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate),         \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate))                                   \
  X(T, void, gemm_tn,                                                                             \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,           \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate),         \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate))                                   \
  X(T, void, gemm_nn_split,                                                                       \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,           \
     const T* b, std::size_t ldb, T* c, std::size_t ldc, std::size_t block,                       \
     std::size_t block_stride, const T* bias, bool accumulate),                                   \
    (m, n, k, alpha, a, lda, b, ldb, c, ldc, block, block_stride, bias, accumulate))              \
  X(T, std::size_t, gemm_panel_width, (), ())                                                     \
  X(T, std::size_t, gemm_packed_b_size, (std::size_t k, std::size_t n), (k, n))                   \
  X(T, void, pack_gemm_b, (std::size_t k, std::size_t n, const T* b, std::size_t ldb, T* dst),    \
    (k, n, b, ldb, dst))                                                                          \
  X(T, void, gemm_nn_split_prepacked,                                                             \
    (std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,           \
     const T* b, std::size_t ldb, const T* panels, std::size_t panel_width, std::size_t panels_n, \
     std::size_t col0, T* c, std::size_t ldc, std::size_t block, std::size_t block_stride,        \
     const T* bias, bool accumulate),                                                             \
    (m, n, k, alpha, a, lda, b, ldb, panels, panel_width, panels_n, col0, c, ldc, block,          \
     block_stride, bias, accumulate))
/// detail::gemm, after PREFIX (`extern template` or `template`): a compiler may instantiate it
/// while inlining gemm_nn<T> (gemm_nt<T>, gemm_tn<T>) declared `extern template`, so it is declared
/// with it (a dispatched entry point has no body to inline). And the tables of micro-kernels by
/// height, detail::gemm_micro_kernel_for, so that a TU which calls another part of the loop
/// nest directly (unit.kernel.gemm: detail::gemm_packed_b) does not compile every micro-kernel
/// again (24 of them for float and double on AVX-512; under ASan+UBSan at -O0 about half of
/// that test's compile).
#define ARGUS_KERNEL_GEMM_INLINED_CALLEES(PREFIX, T)                                              \
  PREFIX void detail::gemm<false, T>(                                                             \
      std::size_t, std::size_t, std::size_t, T, const T*, std::size_t, const T*, std::size_t, T*, \
      std::size_t, const T*, bool, std::size_t, std::size_t, const T*, std::size_t, std::size_t); \
  PREFIX void detail::gemm<true, T>(                                                              \
      std::size_t, std::size_t, std::size_t, T, const T*, std::size_t, const T*, std::size_t, T*, \
      std::size_t, const T*, bool, std::size_t, std::size_t, const T*, std::size_t, std::size_t); \
  PREFIX void detail::gemm<false, T, true>(                                                       \
      std::size_t, std::size_t, std::size_t, T, const T*, std::size_t, const T*, std::size_t, T*, \
      std::size_t, const T*, bool, std::size_t, std::size_t, const T*, std::size_t, std::size_t); \
  PREFIX detail::gemm_micro_kernel_ptr<T>                                                         \
      detail::gemm_micro_kernel_for<T, detail::sliver_layout::rows>(std::size_t) noexcept;        \
  PREFIX detail::gemm_micro_kernel_ptr<T>                                                         \
      detail::gemm_micro_kernel_for<T, detail::sliver_layout::steps>(std::size_t) noexcept;       \
  PREFIX detail::gemm_micro_kernel_ptr<T>                                                         \
      detail::gemm_micro_kernel_for<T, detail::sliver_layout::strided_steps>(                     \
          std::size_t) noexcept;

// kernel/softmax_rows.hpp
#define ARGUS_KERNEL_SOFTMAX_ROWS_ENTRY_POINTS(X, T)                                     \
  X(T, void, softmax_rows, (T * s, std::size_t rows, std::size_t cols, std::size_t lds), \
    (s, rows, cols, lds))

/// Every kernel entry point for value type T.
#define ARGUS_KERNEL_ENTRY_POINTS(X, T)                    \
  ARGUS_KERNEL_FLASH_ATTENTION_ENTRY_POINTS(X, T)          \
  ARGUS_KERNEL_ATTENTION_BACKWARD_ENTRY_POINTS(X, T)       \
  ARGUS_KERNEL_FLASH_ATTENTION_BACKWARD_ENTRY_POINTS(X, T) \
  ARGUS_KERNEL_GEMM_ENTRY_POINTS(X, T)                     \
  ARGUS_KERNEL_SOFTMAX_ROWS_ENTRY_POINTS(X, T)
// NOLINTEND(bugprone-macro-parentheses)

// What each use makes of one entry point, X(T, R, NAME, PARAMS, ARGS).
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ARGUS_KERNEL_EXTERN_TEMPLATE(T, R, NAME, PARAMS, ARGS) extern template R NAME<T> PARAMS;
#define ARGUS_KERNEL_INSTANTIATION(T, R, NAME, PARAMS, ARGS) template R NAME<T> PARAMS;
#define ARGUS_KERNEL_SPECIALIZATION(T, R, NAME, PARAMS, ARGS) \
  template <>                                                 \
  R NAME<T> PARAMS;
#define ARGUS_KERNEL_TABLE_SLOT(T, R, NAME, PARAMS, ARGS) R(*NAME) PARAMS = nullptr;
#define ARGUS_KERNEL_TABLE_ENTRY(T, R, NAME, PARAMS, ARGS) .NAME = &NAME<T>,
// NOLINTEND(bugprone-macro-parentheses)

// The declarations a header makes of the entry points of LIST, in the templates' own
// namespace (Clang 14 drops the primary template's default arguments for an explicit
// specialization declared from an enclosing one).
#if defined(ARGUS_DISPATCH_KERNELS)
#define ARGUS_KERNEL_DECLARE_ENTRY_POINTS(LIST) \
  LIST(ARGUS_KERNEL_SPECIALIZATION, float)      \
  LIST(ARGUS_KERNEL_SPECIALIZATION, double)
#elif defined(ARGUS_EXTERN_KERNELS)
#define ARGUS_KERNEL_DECLARE_ENTRY_POINTS(LIST) \
  LIST(ARGUS_KERNEL_EXTERN_TEMPLATE, float)     \
  LIST(ARGUS_KERNEL_EXTERN_TEMPLATE, double)
#else
#define ARGUS_KERNEL_DECLARE_ENTRY_POINTS(LIST)
#endif
