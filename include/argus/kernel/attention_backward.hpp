// argus/kernel/attention_backward.hpp -- kernel layer: the gradients of the attention core,
// unfused (the specification), and the unfused forward that keeps what they need.
//
// For every batch item b, query head h (K/V head g = h / (heads / kv_heads)) and query i:
//     S_ij = scale · Q_i·K_j + masks        P_i = softmax_j(S_i)        O_i = Σ_j P_ij V_j
// Given dO = dL/dO, the gradients are
//     dV_j = Σ_(h in group) Σ_i P_ij dO_i          dP_ij = dO_i·V_j
//     dS_ij = P_ij (dP_ij − D_i),  D_i = Σ_j P_ij dP_ij  (= dO_i·O_i)
//     dQ_i = scale · Σ_j dS_ij K_j                  dK_j = scale · Σ_(h in group) Σ_i dS_ij Q_i
// With dropout (kernel/dropout.hpp), O_i = Σ_j P̃_ij V_j with P̃_ij = P_ij · keep_ij, keep_ij
// 0 or 1 / (1 − rate); then dV_j sums P̃_ij dO_i, dP_ij = keep_ij · dO_i·V_j, and D_i is
// still dO_i·O_i. The decisions are recomputed from the seed, never stored.
// A masked score has P_ij = 0 exactly, so it carries no gradient, and a query whose keys are
// all masked has P_i = 0 and gets dQ_i = 0 (never NaN). The additive mask's own gradient
// (dS) is not computed: masks are constants.
//
// attention_backward_unfused materialises S, P and dP = dS of one head at a time, (seq_q ×
// seq_kv) each, and forms every product with kernel::gemm. Work items are (batch item, K/V
// head) pairs: one item runs the heads of its group in order and sums their dK and dV, so
// the result does not depend on the thread count. flash_attention_backward.hpp computes the
// same gradients without the (seq_q × seq_kv) buffers.
#pragma once

#include "argus/kernel/dropout.hpp"
#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/parallel.hpp"
#include "argus/kernel/simd.hpp"
#include "argus/kernel/softmax_rows.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace argus::kernel {

/// One backward call: the forward problem (Q, K, V, O, scale, masks), its per-row
/// log-sum-exp, dO, and where the gradients go. dO has O's strides; dQ has Q's, dK K's and
/// dV V's (the merged (batch, seq, heads · d) layouts of a module, or head-major ones).
/// dQ, dK and dV are only written, never read; they overlap none of the inputs.
template <class T>
struct attention_backward_problem {
  attention_problem<T> f;  // f.o: the forward output O; f.lse: unused
  const T* lse = nullptr;  // lse[b][h][i]: (batch, heads, seq_q) row-major
  const T* d_o = nullptr;  // dO[b][h][i][0..d_v), strides of f.o
  T* d_q = nullptr;        // strides of f.q
  T* d_k = nullptr;        // strides of f.k
  T* d_v = nullptr;        // strides of f.v
};

}  // namespace argus::kernel

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

namespace detail {

/// Applies p's masks to the scores row[0..n) of query i, keys [j0, j0 + n); the causal one
/// only if `causal` (callers pass false where no key of the row is after the query).
template <class T>
void mask_score_row(const attention_problem<T>& p, bool causal, std::size_t b, std::size_t h,
                    std::size_t i, std::size_t j0, std::size_t n, T* row) noexcept {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  if (p.additive != nullptr) {
    const T* a = p.additive + b * p.add_batch + h * p.add_head + i * p.add_row + j0;
    for (std::size_t j = 0; j < n; ++j) row[j] += a[j];
  }
  if (p.code.apply != nullptr && p.code.adds)
    p.code.apply(p.code.context, b, &h, &i, 1, j0, n, row, 1, 1);
  if (causal) {
    const std::size_t reach = causal_key_end(p, i + 1);  // keys from reach on are ignored
    for (std::size_t j = (reach > j0 ? reach - j0 : 0); j < n; ++j) row[j] = minus_inf;
    const std::size_t first = causal_key_begin(p, i);  // and keys before first
    for (std::size_t j = 0; j0 + j < first && j < n; ++j) row[j] = minus_inf;
  }
  if (p.key_ignore != nullptr) {
    const std::uint8_t* ki = p.key_ignore + b * p.key_ignore_batch + j0;
    for (std::size_t j = 0; j < n; ++j)
      if (ki[j] != 0) row[j] = minus_inf;
  }
  if (p.ignore != nullptr) {
    const std::uint8_t* ig =
        p.ignore + b * p.ignore_batch + h * p.ignore_head + i * p.ignore_row + j0;
    for (std::size_t j = 0; j < n; ++j)
      if (ig[j] != 0) row[j] = minus_inf;
  }
  if (p.code.apply != nullptr && !p.code.adds)
    p.code.apply(p.code.context, b, &h, &i, 1, j0, n, row, 1, 1);
}

/// dst (cols × rows, row stride ld_dst) = src (rows × cols, row stride ld_src) transposed.
/// Whole width × width blocks go through registers (simd.hpp transpose(): width loads,
/// log2(width) rounds of shuffles, width stores); the ragged right and bottom edges are
/// copied one element at a time. The element-wise loop cost 6 % of the fused backward.
template <class T>
void transpose_into(std::size_t rows, std::size_t cols, const T* src, std::size_t ld_src, T* dst,
                    std::size_t ld_dst) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  const std::size_t full_r = rows / w * w, full_c = cols / w * w;
  for (std::size_t r0 = 0; r0 < full_r; r0 += w) {
    for (std::size_t c0 = 0; c0 < full_c; c0 += w) {
      V block[w];  // unrolled, so that the block stays in registers
#pragma GCC unroll 16
      for (std::size_t q = 0; q < w; ++q) block[q] = V::load(src + (r0 + q) * ld_src + c0);
      transpose(block);
#pragma GCC unroll 16
      for (std::size_t q = 0; q < w; ++q) block[q].store(dst + (c0 + q) * ld_dst + r0);
    }
    for (std::size_t c = full_c; c < cols; ++c)
      for (std::size_t r = r0; r < r0 + w; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
  }
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t r = full_r; r < rows; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
}

/// Per-thread buffers of the unfused steps: S/P, dP/dS and a transposed copy, each
/// (seq_q × seq_kv); grows, never shrinks.
template <class T>
std::vector<T>& unfused_scratch(std::size_t elements) {
  thread_local std::vector<T> scratch;
  if (scratch.size() < elements) scratch.resize(elements);
  return scratch;
}

/// S = scale · Q Kᵀ + masks, then P = softmax(S), for head h of item b (rows of skv).
template <class T>
void unfused_probabilities(const attention_problem<T>& p, std::size_t b, std::size_t h, T* s) {
  const std::size_t g = h / (p.heads / p.kv_heads);
  const T* q = p.q + b * p.q_batch + h * p.q_head;
  const T* k = p.k + b * p.k_batch + g * p.k_head;
  gemm_nt<T>(p.seq_q, p.seq_kv, p.d_k, p.scale, q, p.q_row, k, p.k_row, s, p.seq_kv);
  for (std::size_t i = 0; i < p.seq_q; ++i)
    mask_score_row(p, p.causal, b, h, i, 0, p.seq_kv, s + i * p.seq_kv);
}

/// Fills the (rows × cols) block at d (row stride ld) with zeros.
template <class T>
void zero_rows(T* d, std::size_t rows, std::size_t cols, std::size_t ld) noexcept {
  for (std::size_t r = 0; r < rows; ++r) std::fill(d + r * ld, d + r * ld + cols, T(0));
}

// What a pair that a mask ignores brings to the output and the gradients: nothing, whatever
// the rows of Q, K, V and dO it joins hold (docs/reference/semantics.md, rules 6 and 9). Its
// P is 0, but 0 · NaN is NaN, so a row that is not finite is kept out of the products where
// it meets such pairs: zeroed in a copy, and added back, one product at a time, to the pairs
// no mask ignores. Inputs that are all finite pay for a finiteness scan only.

/// Whether p has a mask, so that some pair may be ignored.
template <class T>
bool has_masks(const attention_problem<T>& p) noexcept {
  return p.causal || p.element_masks();
}

/// f(r) for each row r < n of x (cols elements each, row stride ld) that holds a NaN or an
/// infinity, in order.
template <class T, class F>
void for_each_non_finite_row(const T* x, std::size_t n, std::size_t cols, std::size_t ld, F f) {
  for (std::size_t r = 0; r < n; ++r)
    if (!all_finite(x + r * ld, cols)) f(r);
}

/// The rows r < n of x that hold a NaN or an infinity (for_each_non_finite_row).
template <class T>
std::vector<std::size_t> non_finite_rows(const T* x, std::size_t n, std::size_t cols,
                                         std::size_t ld) {
  std::vector<std::size_t> rows;
  for_each_non_finite_row(x, n, cols, ld, [&](std::size_t r) { rows.push_back(r); });
  return rows;
}

/// A (n × cols) row-major copy of x (row stride ld) with the listed rows zeroed.
template <class T>
std::vector<T> copy_without_rows(const T* x, std::size_t n, std::size_t cols, std::size_t ld,
                                 const std::vector<std::size_t>& rows) {
  std::vector<T> copy(n * cols);
  for (std::size_t r = 0; r < n; ++r) std::copy(x + r * ld, x + r * ld + cols, &copy[r * cols]);
  for (std::size_t r : rows) std::fill(&copy[r * cols], &copy[r * cols] + cols, T(0));
  return copy;
}

/// Sets to 0 the elements of the (rows × n) tiles a and c (row stride ld; c may be null) whose
/// pair (query i0 + r, key j0 + j) of head h, batch item b, a mask of p ignores.
template <class T>
void zero_ignored_pairs(const attention_problem<T>& p, std::size_t b, std::size_t h, std::size_t i0,
                        std::size_t rows, std::size_t j0, std::size_t n, T* a, T* c,
                        std::size_t ld) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j)
      if (mask_ignores(p, b, h, i0 + r, j0 + j)) {
        a[r * ld + j] = T(0);
        if (c != nullptr) c[r * ld + j] = T(0);
      }
}

/// Whether the (rows × n) tile at a (row stride ld) is all finite.
template <class T>
bool tile_all_finite(const T* a, std::size_t rows, std::size_t n, std::size_t ld) noexcept {
  simd<T> seen = simd<T>::zero();
  for (std::size_t r = 0; r < rows; ++r) seen = accumulate_non_finite(a + r * ld, n, seen);
  return saw_only_finite(seen);
}

/// What a product over a copy of B with the `listed` rows zeroed left out, added back for the
/// pairs no mask ignores. W is a (query × key) tile (row stride ldw) of queries i0.. and keys
/// j0..; C has `rows` rows of `cols` elements (row stride ldc) and B's rows are `cols` wide
/// (row stride ldb). C's rows are queries and B's rows keys (C += alpha · W B: O = P V,
/// dQ = scale · dS K) or, when `c_by_key`, C's rows are keys and B's queries (C += alpha · Wᵀ B:
/// dV = P̃ᵀ dO, dK = scale · dSᵀ Q).
template <class T>
void add_back_rows(const attention_problem<T>& p, std::size_t b, std::size_t h, std::size_t i0,
                   std::size_t j0, bool c_by_key, std::size_t rows, std::size_t cols, T alpha,
                   const T* w, std::size_t ldw, const T* bm, std::size_t ldb,
                   const std::size_t* listed, std::size_t count, T* c, std::size_t ldc) noexcept {
  for (std::size_t u = 0; u < count; ++u) {
    const std::size_t kept = listed[u];
    const T* brow = bm + kept * ldb;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t i = c_by_key ? kept : r, j = c_by_key ? r : kept;
      if (mask_ignores(p, b, h, i0 + i, j0 + j)) continue;
      const T x = alpha * w[i * ldw + j];
      T* crow = c + r * ldc;
      for (std::size_t e = 0; e < cols; ++e) crow[e] += x * brow[e];
    }
  }
}

}  // namespace detail

/// The forward pass, unfused: S, P of one head at a time materialised; writes p.o and, when
/// p.lse is set, the per-row log-sum-exp. Same contract as flash_attention(p).
template <class T>
void attention_unfused(const attention_problem<T>& p) {
  assert(p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && p.d_k >= 1);
  // No query: nothing to write (and O, whose heads may be strided views of a merged output,
  // may have no storage to offset into).
  if (p.seq_q == 0) return;
  const T minus_inf = -std::numeric_limits<T>::infinity();
  parallel_for(p.batch * p.heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / p.heads, h = t % p.heads, g = h / (p.heads / p.kv_heads);
    T* o = p.o + b * p.o_batch + h * p.o_head;
    if (p.seq_kv == 0) {
      detail::zero_rows(o, p.seq_q, p.d_v, p.o_row);
      if (p.lse != nullptr)
        std::fill(p.lse + b * p.lse_batch + h * p.lse_head,
                  p.lse + b * p.lse_batch + h * p.lse_head + p.seq_q, minus_inf);
      return;
    }
    T* s = detail::unfused_scratch<T>(p.seq_q * p.seq_kv).data();  // (SEQ_Q,SEQ_KV)
    detail::unfused_probabilities(p, b, h, s);
    detail::softmax_rows_lse(s, p.seq_q, p.seq_kv, p.seq_kv,
                             p.lse != nullptr ? p.lse + b * p.lse_batch + h * p.lse_head : nullptr);
    const attention_dropout<T> drop(p.dropout_rate, p.dropout_seed);
    if (drop.active())
      for (std::size_t i = 0; i < p.seq_q; ++i)
        drop.apply(b, h, i, 0, p.seq_kv, s + i * p.seq_kv, 1);
    const T* v = p.v + b * p.v_batch + g * p.v_head;
    const std::vector<std::size_t> bad_v =
        detail::has_masks(p) ? detail::non_finite_rows(v, p.seq_kv, p.d_v, p.v_row)
                             : std::vector<std::size_t>{};
    if (bad_v.empty()) {
      gemm_nn<T>(p.seq_q, p.d_v, p.seq_kv, T(1), s, p.seq_kv, v, p.v_row, o, p.o_row);
      return;
    }
    // V rows that are not finite reach only the queries no mask keeps from them (rule 6).
    const std::vector<T> clean = detail::copy_without_rows(v, p.seq_kv, p.d_v, p.v_row, bad_v);
    gemm_nn<T>(p.seq_q, p.d_v, p.seq_kv, T(1), s, p.seq_kv, clean.data(), p.d_v, o, p.o_row);
    detail::add_back_rows(p, b, h, 0, 0, false, p.seq_q, p.d_v, T(1), s, p.seq_kv, v, p.v_row,
                          bad_v.data(), bad_v.size(), o, p.o_row);
  });
}

/// The gradients dQ, dK, dV of bp.f given dO, unfused (the specification; bp.lse unused).
/// pre: as flash_attention(bp.f).
template <class T>
void attention_backward_unfused(const attention_backward_problem<T>& bp) {
  const attention_problem<T>& p = bp.f;
  assert(p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && p.d_k >= 1);
  const std::size_t group = p.heads / p.kv_heads;
  const std::size_t sq = p.seq_q, skv = p.seq_kv;
  // Under a mask, rows of K, Q and dO that are not finite are kept out of the products where
  // they meet the pairs it ignores, and P, dP̃ and dS are zeroed at those pairs wherever a row
  // of them is not finite (what a pair a mask ignores brings: nothing, rule 9).
  const bool masked = detail::has_masks(p);
  parallel_for(p.batch * p.kv_heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / p.kv_heads, g = t % p.kv_heads;
    if (skv == 0) {  // no key: dQ = 0 (and K, V, dK, dV, maybe views of merged arrays, no storage)
      if (sq != 0)
        for (std::size_t h = g * group; h < (g + 1) * group; ++h)
          detail::zero_rows(bp.d_q + b * p.q_batch + h * p.q_head, sq, p.d_k, p.q_row);
      return;
    }
    const T* k = p.k + b * p.k_batch + g * p.k_head;
    const T* v = p.v + b * p.v_batch + g * p.v_head;
    T* dk = bp.d_k + b * p.k_batch + g * p.k_head;
    T* dv = bp.d_v + b * p.v_batch + g * p.v_head;
    detail::zero_rows(dk, skv, p.d_k, p.k_row);
    detail::zero_rows(dv, skv, p.d_v, p.v_row);
    const attention_dropout<T> drop(p.dropout_rate, p.dropout_seed);
    std::vector<T>& scratch = detail::unfused_scratch<T>(3 * sq * skv + (drop.active() ? skv : 0));
    T* s = scratch.data();    // (SEQ_Q,SEQ_KV) S, then P
    T* ds = s + sq * skv;     // (SEQ_Q,SEQ_KV) dP̃ = dO Vᵀ, then dS
    T* tr = ds + sq * skv;    // (SEQ_KV,SEQ_Q) P̃ᵀ, then dSᵀ
    T* keep = tr + sq * skv;  // [SEQ_KV] one row's dropout factors
    const std::vector<std::size_t> bad_k =
        masked ? detail::non_finite_rows(k, skv, p.d_k, p.k_row) : std::vector<std::size_t>{};
    const std::vector<T> k_clean =
        bad_k.empty() ? std::vector<T>{} : detail::copy_without_rows(k, skv, p.d_k, p.k_row, bad_k);
    for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
      if (sq == 0) continue;  // no query (and dO, maybe a view of a merged array, no storage)
      const T* q = p.q + b * p.q_batch + h * p.q_head;
      const T* d_o = bp.d_o + b * p.o_batch + h * p.o_head;
      T* dq = bp.d_q + b * p.q_batch + h * p.q_head;
      detail::unfused_probabilities(p, b, h, s);
      softmax_rows(s, sq, skv, skv);                                        // P
      gemm_nt<T>(sq, skv, p.d_v, T(1), d_o, p.o_row, v, p.v_row, ds, skv);  // dP̃ = dO Vᵀ
      for (std::size_t i = 0; i < sq; ++i) {
        T* pr = s + i * skv;
        T* dr = ds + i * skv;
        if (drop.active()) {  // P̃ = P ∘ keep, dP = dP̃ ∘ keep
          drop.factors(b, h, i, 0, skv, keep);
          for (std::size_t j = 0; j < skv; ++j) dr[j] *= keep[j];
        }
        if (masked && !(all_finite(pr, skv) && all_finite(dr, skv)))
          detail::zero_ignored_pairs(p, b, h, i, 1, 0, skv, pr, dr, skv);
        T d = T(0);
        for (std::size_t j = 0; j < skv; ++j) d += pr[j] * dr[j];
        for (std::size_t j = 0; j < skv; ++j) dr[j] = pr[j] * (dr[j] - d);  // dS
        if (masked && !all_finite(dr, skv))  // D_i is not finite: P_ij = 0 does not cancel it
          detail::zero_ignored_pairs(p, b, h, i, 1, 0, skv, dr, static_cast<T*>(nullptr), skv);
        if (drop.active())
          for (std::size_t j = 0; j < skv; ++j) pr[j] *= keep[j];  // P̃, for dV
      }
      const std::vector<std::size_t> bad_o =
          masked ? detail::non_finite_rows(d_o, sq, p.d_v, p.o_row) : std::vector<std::size_t>{};
      const std::vector<std::size_t> bad_q =
          masked ? detail::non_finite_rows(q, sq, p.d_k, p.q_row) : std::vector<std::size_t>{};
      detail::transpose_into(sq, skv, s, skv, tr, sq);
      if (bad_o.empty()) {
        gemm_nn<T>(skv, p.d_v, sq, T(1), tr, sq, d_o, p.o_row, dv, p.v_row, nullptr,
                   true);  // dV += P̃ᵀ dO
      } else {
        const std::vector<T> clean = detail::copy_without_rows(d_o, sq, p.d_v, p.o_row, bad_o);
        gemm_nn<T>(skv, p.d_v, sq, T(1), tr, sq, clean.data(), p.d_v, dv, p.v_row, nullptr, true);
        detail::add_back_rows(p, b, h, 0, 0, true, skv, p.d_v, T(1), s, skv, d_o, p.o_row,
                              bad_o.data(), bad_o.size(), dv, p.v_row);
      }
      gemm_nn<T>(sq, p.d_k, skv, p.scale, ds, skv, bad_k.empty() ? k : k_clean.data(),
                 bad_k.empty() ? p.k_row : p.d_k, dq, p.q_row);  // dQ = scale dS K
      detail::add_back_rows(p, b, h, 0, 0, false, sq, p.d_k, p.scale, ds, skv, k, p.k_row,
                            bad_k.data(), bad_k.size(), dq, p.q_row);
      detail::transpose_into(sq, skv, ds, skv, tr, sq);
      if (bad_q.empty()) {
        gemm_nn<T>(skv, p.d_k, sq, p.scale, tr, sq, q, p.q_row, dk, p.k_row, nullptr,
                   true);  // dK += scale dSᵀ Q
      } else {
        const std::vector<T> clean = detail::copy_without_rows(q, sq, p.d_k, p.q_row, bad_q);
        gemm_nn<T>(skv, p.d_k, sq, p.scale, tr, sq, clean.data(), p.d_k, dk, p.k_row, nullptr,
                   true);
        detail::add_back_rows(p, b, h, 0, 0, true, skv, p.d_k, p.scale, ds, skv, q, p.q_row,
                              bad_q.data(), bad_q.size(), dk, p.k_row);
      }
    }
  });
}

// This header's entry points, declared for the program's use of the kernels
// (kernel/entry_points.hpp).
ARGUS_KERNEL_DECLARE_ENTRY_POINTS(ARGUS_KERNEL_ATTENTION_BACKWARD_ENTRY_POINTS)

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
