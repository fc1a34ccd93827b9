// argus/kernel/softmax_rows.hpp -- kernel layer: numerically stable softmax over rows.
//
// softmax_rows(s, rows, cols, lds) replaces each row of the row-major block s (rows x cols,
// lds elements between rows) by its softmax. Pointers and run-time extents only.
#pragma once

#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/simd.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

/// In place, for every row r of s: s[r][j] <- e^(s[r][j] - m) / sum_j' e^(s[r][j'] - m),
/// with m the row maximum.
///
/// Contract (docs/reference/semantics.md): -infinity is a masked entry and becomes exactly 0.
/// A row whose entries are all -infinity (and an empty row) becomes all zeros, never NaN.
/// A row with a NaN or a +infinity entry becomes all NaN. Subtracting the maximum keeps every
/// exponent <= 0, so logits of any finite magnitude (e.g. +-1e4) give finite results, and
/// the sum is >= 1 (the maximum contributes e^0), so the division is always defined.
///
/// Three passes per row -- maximum, exponentials and their sum, scaling by 1/sum -- each
/// over whole registers with several independent accumulators, and one masked register for
/// the tail. The tail goes through the same vector exp(), so an entry's value does not
/// depend on its position in the row.
template <class T>
void softmax_rows(T* s, std::size_t rows, std::size_t cols, std::size_t lds);

namespace detail {

/// softmax_rows, and where lse is not null each row's log-sum-exp, lse[r] = m + ln Σ_j e^(s[r][j]
/// - m), from the same maximum and sum (-inf for a row of -inf entries or an empty one, NaN where
/// the row becomes NaN): the unfused forward's lse for training (attention_unfused), which took a
/// pass of std::exp of its own over the scores (docs/performance.md, "The unfused forward's
/// log-sum-exp from its softmax").
template <class T>
void softmax_rows_lse(T* s, std::size_t rows, std::size_t cols, std::size_t lds, T* lse) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::softmax_rows<T> is defined for float and double");
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  constexpr std::size_t lanes = 4;  // independent accumulators per pass
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  const std::size_t full = cols / w * w;  // columns in whole registers
  const std::size_t unrolled = cols / (lanes * w) * (lanes * w);
  const std::size_t tail = cols - full;

  for (std::size_t r = 0; r < rows; ++r) {
    T* row = s + r * lds;

    // Pass 1: the maximum.
    V mx[lanes];
    for (auto& m : mx) m = V::broadcast(minus_inf);
    std::size_t j = 0;
    for (; j < unrolled; j += lanes * w)
      for (std::size_t u = 0; u < lanes; ++u) mx[u] = max(mx[u], V::load(row + j + u * w));
    for (; j < full; j += w) mx[0] = max(mx[0], V::load(row + j));
    if (tail) mx[1] = max(mx[1], V::load_partial(row + full, tail, minus_inf));
    const T row_max = reduce_max(max(max(mx[0], mx[1]), max(mx[2], mx[3])));

    if (row_max == minus_inf) {  // fully masked (or empty): zeros, not 0/0
      // max() may have passed over a NaN; such a row is NaN (rare: only rows that look masked
      // are scanned). Otherwise a NaN makes the sum below NaN, and +inf gives inf - inf.
      bool nan = false;
      for (std::size_t c = 0; c < cols; ++c) nan = nan || row[c] != row[c];
      for (std::size_t c = 0; c < cols; ++c)
        row[c] = nan ? std::numeric_limits<T>::quiet_NaN() : T(0);
      if (lse != nullptr) lse[r] = nan ? std::numeric_limits<T>::quiet_NaN() : minus_inf;
      continue;
    }

    // Pass 2: e^(x - max) in place, and the sum.
    const V vmax = V::broadcast(row_max);
    V sum[lanes];
    for (auto& x : sum) x = V::zero();
    j = 0;
    for (; j < unrolled; j += lanes * w)
      for (std::size_t u = 0; u < lanes; ++u) {
        const V e = exp(V::load(row + j + u * w) - vmax);
        e.store(row + j + u * w);
        sum[u] += e;
      }
    for (; j < full; j += w) {
      const V e = exp(V::load(row + j) - vmax);
      e.store(row + j);
      sum[0] += e;
    }
    if (tail) {
      // Masked lanes load -inf, whose exponential is exactly 0.
      const V e = exp(V::load_partial(row + full, tail, minus_inf) - vmax);
      e.store_partial(row + full, tail);
      sum[1] += e;
    }
    const T total = reduce_add((sum[0] + sum[1]) + (sum[2] + sum[3]));
    if (lse != nullptr) lse[r] = row_max + std::log(total);

    // Pass 3: scale by 1 / sum (total >= 1: the maximum contributed e^0).
    const V inv = V::broadcast(T(1) / total);
    j = 0;
    for (; j < full; j += w) (V::load(row + j) * inv).store(row + j);
    if (tail) (V::load_partial(row + full, tail) * inv).store_partial(row + full, tail);
  }
}

}  // namespace detail

template <class T>
void softmax_rows(T* s, std::size_t rows, std::size_t cols, std::size_t lds) {
  detail::softmax_rows_lse(s, rows, cols, lds, static_cast<T*>(nullptr));
}

// This header's entry points, declared for the program's use of the kernels
// (kernel/entry_points.hpp).
ARGUS_KERNEL_DECLARE_ENTRY_POINTS(ARGUS_KERNEL_SOFTMAX_ROWS_ENTRY_POINTS)

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
