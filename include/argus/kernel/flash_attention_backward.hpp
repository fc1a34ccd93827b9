// argus/kernel/flash_attention_backward.hpp -- kernel layer: the fused backward pass of the
// attention core (FlashAttention-2, Algorithm 2).
//
// flash_attention_backward(bp) computes the gradients attention_backward.hpp defines without
// any (seq_q × seq_kv) buffer. First D_i = dO_i·O_i for every row. Then the keys are cut
// into tiles; a work item is (batch item, K/V head g, key tile j) and owns dK_j and dV_j.
// For every query head h of the group and every query tile i that can see tile j it
// recomputes, in (Q_TILE × K_TILE) tiles,
//     S = scale · Q_i K_jᵀ + masks        P = e^(S − lse_i)      (lse kept by the forward)
//     dV_j += Pᵀ dO_i      dP = dO_i V_jᵀ      dS = P ∘ (dP − D_i)
// (with dropout, kernel/dropout.hpp: P̃ = P ∘ keep in dV, dP = keep ∘ dO_i V_jᵀ, the
// decisions recomputed per tile from the seed),
//     dK_j += scale · dSᵀ Q_i              dQ_i += scale · dS K_j
// with kernel::gemm's micro-kernels on the tiles: K_j and V_j packed once per item for S, dP and
// dQ (gemm_packed_b), dS read in place as dQ's A operand, Pᵀ and dSᵀ read transposed while
// packed for dV and dK (never copied). A causal mask skips the query tiles that lie wholly before
// the key tile (their P is 0), computes S, P, dP, dS and dQ's term of a sliver of rows only for
// the keys its last row can see and dV, dK only for the keys the tile's last row can see, and is
// applied only where a sliver crosses the diagonal; the other masks are applied per tile; a row
// whose keys are all masked (lse = -inf) has P = 0 and gets no gradient.
//
// Threads. dK_j and dV_j belong to one item, so they need no synchronisation; dQ_i receives
// a term from every key tile. When there are enough (batch item, K/V head) pairs for the
// threads (a multiple of the thread count, or at least four per thread), each pair is one
// task that runs all its key tiles in order: it alone writes its heads' dQ, so nothing is
// shared and the result is bitwise the same for every thread count. Otherwise the (batch
// item, key tile) columns, each with all its K/V heads, are dealt round-robin to
// T = min(threads, batch · key tiles) fixed tasks; task 0 accumulates into dQ itself and
// task t > 0 into its own partial dQ, and the partials are added in task order at the end.
// No atomics either way; for a fixed thread count the result is the same on every run (the
// task, not the OS thread, fixes the work), and since no task's work depends on the head,
// heads with equal weights get bitwise equal gradients. Memory beyond the outputs: D
// (batch · heads · seq_q), per thread three tiles, a Q and a dO sliver and one key tile's
// packed K and V, and on the column path (T − 1) partial dQ.
#pragma once

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/dropout.hpp"
#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/flash_micro_kernels.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/parallel.hpp"
#include "argus/kernel/simd.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

/// Query rows and keys per tile of flash_attention_backward. A key tile's K_j and V_j are
/// packed once per item (gemm_packed_b) and serve every query tile of every head of the group;
/// a query tile is worked one register sliver of rows at a time for S, P, dP, dS and dQ, and
/// whole for dV and dK, whose depth is the tile's query count. 64 × 256 (three tiles of
/// 64 × gemm_tile::kc and three packed key operands, 384 KiB per thread in float) against
/// 128 × 128, both with the packing and the slivers: 3-8 % less time (alternating runs, min of
/// 4-10; h 8, d 64, n 1024 and 4096, one thread; AMD EPYC Zen 5, AVX-512 and, built with
/// -march=x86-64-v3, AVX2; 2026-11-24). Before the packing and the slivers, 128 × 128 beat
/// 64 × 64 by 4-13 % on Zen 3 (AVX2).
struct flash_backward_tiles {
  static constexpr std::size_t q_tile = 64, k_tile = 256;
};

namespace detail {

/// D[b][h][i] = dO_i·O_i, (batch, heads, seq_q) row-major.
template <class T>
void backward_row_dots(const attention_backward_problem<T>& bp, T* d) {
  const attention_problem<T>& p = bp.f;
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  parallel_for(p.batch * p.heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / p.heads, h = t % p.heads;
    for (std::size_t i = 0; i < p.seq_q; ++i) {
      const std::size_t off = b * p.o_batch + h * p.o_head + i * p.o_row;
      const T* o = p.o + off;
      const T* d_o = bp.d_o + off;
      V acc = V::zero();
      std::size_t c = 0;
      for (; c + w <= p.d_v; c += w) acc = fma(V::load(o + c), V::load(d_o + c), acc);
      if (c < p.d_v)
        acc = fma(V::load_partial(o + c, p.d_v - c), V::load_partial(d_o + c, p.d_v - c), acc);
      d[t * p.seq_q + i] = reduce_add(acc);
    }
  });
}

/// One thread's tiles: P, dS and the dropout factors, each (Q_TILE × K_TILE) with the row
/// stride gemm_tile<T>::kc, which makes dS the packed A operand of dQ += dS K_j in place
/// (gemm_packed_b), and P and dS the A operands of dV += Pᵀ dO and dK += dSᵀ Q in place,
/// a sliver being a few columns (sliver_layout::strided_steps, gemm_tn_tile): no transposed
/// copies and no packing. `panels` holds the key tile's K_jᵀ, V_jᵀ and K_j packed as B
/// operands, once per item, and a query tile's dO or Q (backward_panel_elements).
template <class T>
struct backward_tiles {
  static constexpr std::size_t bq = flash_backward_tiles::q_tile, bk = flash_backward_tiles::k_tile;
  static constexpr std::size_t ld = gemm_tile<T>::kc;
  static_assert(bk <= ld, "a tile row must fit the packed sliver stride");
  static constexpr std::size_t count = 3;
  static constexpr std::size_t sliver = gemm_tile<T>::mr * ld;  // one packed A sliver
  /// Elements of `storage`: the three tiles and the Q and dO slivers.
  static constexpr std::size_t elements = count * bq * ld + 2 * sliver;
  /// Both aligned to buffer_alignment: the micro-kernels load whole vectors of the packed
  /// panels and store whole vectors into P and dS, which would otherwise straddle two cache
  /// lines each (a large std::vector's data is 16 bytes past a page).
  flash_scratch storage_, panels_;
  T* base() { return static_cast<T*>(storage_.get(elements * sizeof(T))); }
  T* p() { return base(); }                           // (Q_TILE,K_TILE)
  T* ds() { return base() + bq * ld; }                // (Q_TILE,K_TILE)
  T* keep() { return base() + 2 * bq * ld; }          // (Q_TILE,K_TILE)
  T* q_sliver() { return base() + count * bq * ld; }  // (MR,D_K) stride ld
  T* do_sliver() { return q_sliver() + sliver; }      // (MR,D_V) stride ld
  /// `n` elements for the packed operands (grown, never shrunk).
  T* panels(std::size_t n) { return static_cast<T*>(panels_.get(n * sizeof(T))); }
};

/// Elements of backward_tiles::panels for a key tile of nk keys: K_jᵀ (B of S = Q K_jᵀ),
/// V_jᵀ (B of dP̃ = dO V_jᵀ) and K_j (B of dQ += dS K_j), packed once per item, then a query
/// tile's dO or Q (B of dV += P̃ᵀ dO and of dK += dSᵀ Q), packed once per query tile.
template <class T>
std::size_t backward_panel_elements(const attention_problem<T>& p, std::size_t nk) noexcept {
  return packed_b_elements<T>(p.d_k, nk) + packed_b_elements<T>(p.d_v, nk) +
         packed_b_elements<T>(nk, p.d_k) +
         packed_b_elements<T>(flash_backward_tiles::q_tile, std::max(p.d_k, p.d_v));
}

/// C (m × n) += alpha · Aᵀ B for Aᵀ the (k × m) tile `at` with the row stride
/// gemm_tile<T>::kc (P or dS of a query tile), read in place (sliver_layout::strided_steps),
/// and B (k × n) packed by pack_b_panels(k, n, ...) at `panels`; k <= kc. dV += Pᵀ dO and
/// dK += dSᵀ Q of a query tile.
template <class T>
void gemm_tn_tile(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* at,
                  const T* panels, T* c, std::size_t ldc) {
  using tile = gemm_tile<T>;
  assert(k <= tile::kc);
  if (m == 0 || n == 0 || k == 0) return;
  // Slivers of nearly equal height, as in gemm.
  const sliver_cut cut = sliver_cut::of<T>(m);
  constexpr auto layout = sliver_layout::strided_steps;
  const auto short_kernel = gemm_micro_kernel_for<T, layout>(cut.short_rows);
  const auto tall_kernel = gemm_micro_kernel_for<T, layout>(cut.tall_rows);
  for (std::size_t s = 0, ir = 0; s < cut.count; ++s) {
    const std::size_t rows = cut.rows(s);
    const auto kernel = s < cut.tall ? tall_kernel : short_kernel;
    for (std::size_t jr = 0; jr < n; jr += tile::nr) {
      const std::size_t cols = std::min(tile::nr, n - jr);
      const T* panel = panels + jr * k;
      T* c_tile = c + ir * ldc + jr;
      if (cols == tile::nr)
        kernel(k, at + ir, panel, contiguous_vectors<T>(c_tile).at, ldc, alpha, nullptr, true);
      else
        gemm_narrow_tile<T>(kernel, rows, cols, k, at + ir, panel, c_tile, ldc, alpha, nullptr,
                            true);
    }
    ir += rows;
  }
}

template <class T>
backward_tiles<T>& thread_backward_tiles() {
  thread_local backward_tiles<T> tiles;
  return tiles;
}

/// Whether p's causal mask hides some of keys [j0, j0 + nk) from some of the
/// queries [i0, i0 + rows) (rows >= 1): some key lies past the first query's reach, or before
/// the last query's window.
template <class T>
bool crosses_diagonal(const attention_problem<T>& p, std::size_t i0, std::size_t rows,
                      std::size_t j0, std::size_t nk) noexcept {
  return p.causal &&
         (j0 + nk > causal_key_end(p, i0 + 1) || j0 < causal_key_begin(p, i0 + rows - 1));
}

/// row[j] = e^(row[j] − l) for j < nk (l the row's lse, not -inf), as 2^x: Fold, x = row[j] ·
/// log2 e − l · log2 e in one FMA (l · log2 e rounded once for the row); else x = (row[j] −
/// l) · log2 e. Four exponentials in flight.
template <bool Fold, class T>
[[gnu::always_inline]] inline void exponentiate_row(T* row, std::size_t nk, T l) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  const V lv = V::broadcast(l), log2e = V::broadcast(std::numbers::log2e_v<T>);
  const V minus_l2 = V::broadcast(-(l * std::numbers::log2e_v<T>));
  const auto exponent = [&](V x) __attribute__((always_inline)) {
    if constexpr (Fold)
      return fma(x, log2e, minus_l2);
    else
      return (x - lv) * log2e;
  };
  std::size_t j = 0;
  for (; j + 4 * w <= nk; j += 4 * w) {
    V e[4];
    for (std::size_t u = 0; u < 4; ++u) e[u] = exponent(V::load(row + j + u * w));
    exp2_nonpositive(e);
    for (std::size_t u = 0; u < 4; ++u) e[u].store(row + j + u * w);
  }
  for (; j + w <= nk; j += w) exp2_nonpositive(exponent(V::load(row + j))).store(row + j);
  if (j < nk)
    exp2_nonpositive(
        exponent(V::load_partial(row + j, nk - j, -std::numeric_limits<T>::infinity())))
        .store_partial(row + j, nk - j);
}

/// P = e^(S − lse) in place on the (nq × nk) tile s (row stride bk), masks applied first;
/// rows with lse = -inf become 0.
template <class T>
void tile_probabilities(const attention_problem<T>& p, std::size_t b, std::size_t h, std::size_t i0,
                        std::size_t nq, std::size_t j0, std::size_t nk, const T* lse, T* s,
                        std::size_t ld) noexcept {
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const bool causal_cross = crosses_diagonal(p, i0, nq, j0, nk);
  const bool other_masks = p.element_masks();
  for (std::size_t r = 0; r < nq; ++r) {
    T* row = s + r * ld;
    const T l = lse[i0 + r];
    if (l == minus_inf) {
      std::fill(row, row + nk, T(0));
      continue;
    }
    if (causal_cross || other_masks) mask_score_row(p, causal_cross, b, h, i0 + r, j0, nk, row);
    // S − lse <= 0 up to the rounding of recomputing S (lse >= the row's maximum): e^(S − lse)
    // as 2^x, the forward's way (softmax_step): x = S · log2 e − lse · log2 e in one FMA
    // where it rounds once and |lse| <= fold_bound, else (S − lse) · log2 e. A tiny positive
    // x gives 2^x as accurately, -inf gives 0, NaN stays NaN.
    if (fma_is_fused && std::abs(l) <= fold_bound<T>)
      exponentiate_row<true>(row, nk, l);
    else
      exponentiate_row<false>(row, nk, l);
  }
}

/// dS = P ∘ (dP − D) in place over dP (nq × nk, row stride ld); with dropout factors
/// `keep` (same layout, or null), dP = dP̃ ∘ keep is formed from dP̃ = dO Vᵀ first.
template <class T>
void tile_score_gradient(std::size_t nq, std::size_t nk, const T* pt, T* dp, std::size_t ld,
                         const T* d, const T* keep) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  for (std::size_t r = 0; r < nq; ++r) {
    const T* pr = pt + r * ld;
    T* dr = dp + r * ld;
    const V dv = V::broadcast(d[r]);
    std::size_t j = 0;
    if (keep != nullptr) {
      const T* kr = keep + r * ld;
      for (; j + w <= nk; j += w)
        (V::load(pr + j) * (V::load(dr + j) * V::load(kr + j) - dv)).store(dr + j);
      for (; j < nk; ++j) dr[j] = pr[j] * (dr[j] * kr[j] - d[r]);
      continue;
    }
    for (; j + w <= nk; j += w) (V::load(pr + j) * (V::load(dr + j) - dv)).store(dr + j);
    for (; j < nk; ++j) dr[j] = pr[j] * (dr[j] - d[r]);
  }
}

/// S, P, dP and dS of one sliver of Rows query rows against keys [0, ns) of a key tile, one
/// register tile (Rows × nr keys) at a time, for a sliver that no mask touches, without
/// dropout and with every lse finite:
///     S = scale · Q Kᵀ   P = e^(S − lse) -> p      dP = dO Vᵀ   dS = P ∘ (dP − D) -> ds
/// S and dP never leave the registers: the exponential is the epilogue of S's product and dS
/// the epilogue of dP's, so neither is stored and read back (the stored path, gemm_packed_b
/// then tile_probabilities and tile_score_gradient, costs a pass over each; the two round
/// alike, up to the sign of a zero). q and d_o are the sliver's rows packed with the stride
/// gemm_tile<T>::kc (d_k, d_v <= kc), k_t and v_t the key tile's K_jᵀ and V_jᵀ
/// (pack_b_panels, depths d_k and d_v); p and ds have row stride ld >= ns rounded up to nr,
/// and columns from ns to that bound receive values the caller overwrites or never reads.
template <class T, std::size_t Rows>
void sliver_probabilities_and_gradient(std::size_t ns, std::size_t d_k, std::size_t d_v, T scale,
                                       const T* q, const T* k_t, const T* d_o, const T* v_t,
                                       const T* lse, const T* dd, T* p, T* ds,
                                       std::size_t ld) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  constexpr std::size_t nv = tile::nv, nr = tile::nr, w = tile::width;
  const V log2e = V::broadcast(std::numbers::log2e_v<T>), vscale = V::broadcast(scale);
  const V scale_log2e = V::broadcast(scale * std::numbers::log2e_v<T>);
  for (std::size_t jr = 0; jr < ns; jr += nr) {
    V acc[Rows][nv];
    unroll<Rows>([&](auto i) __attribute__((always_inline)) {
      unroll<nv>([&](auto j) __attribute__((always_inline)) { acc[i][j] = V::zero(); });
    });
    micro_tile_product<T, Rows>(d_k, q, k_t + jr * d_k, acc);
    // P = e^(S − lse) = 2^x, as tile_probabilities computes it from the stored S: x = acc ·
    // (scale · log2 e) − lse · log2 e in one FMA where it rounds once and |lse| <=
    // fold_bound (S is never rounded on its own), else (acc · scale − lse) · log2 e.
    unroll<Rows>([&](auto i) __attribute__((always_inline)) {
      const T li = lse[i];
      if (fma_is_fused && std::abs(li) <= fold_bound<T>) {
        const V minus_l2 = V::broadcast(-(li * std::numbers::log2e_v<T>));
        unroll<nv>([&](auto j) __attribute__((always_inline)) {
          acc[i][j] = fma(acc[i][j], scale_log2e, minus_l2);
        });
      } else {
        const V l = V::broadcast(li);
        unroll<nv>([&](auto j) __attribute__((always_inline)) {
          acc[i][j] = (acc[i][j] * vscale - l) * log2e;
        });
      }
      exp2_nonpositive(acc[i]);
      unroll<nv>([&](auto j) __attribute__((always_inline)) {
        acc[i][j].store(p + i * ld + jr + j * w);
        acc[i][j] = V::zero();
      });
    });
    micro_tile_product<T, Rows>(d_v, d_o, v_t + jr * d_v, acc);
    // dS = P ∘ (dP − D), P read back from L1.
    unroll<Rows>([&](auto i) __attribute__((always_inline)) {
      const V d = V::broadcast(dd[i]);
      unroll<nv>([&](auto j) __attribute__((always_inline)) {
        (V::load(p + i * ld + jr + j * w) * (acc[i][j] - d)).store(ds + i * ld + jr + j * w);
      });
    });
  }
}

template <class T>
using sliver_gradient_ptr = void (*)(std::size_t, std::size_t, std::size_t, T, const T*, const T*,
                                     const T*, const T*, const T*, const T*, T*, T*,
                                     std::size_t) noexcept;

/// sliver_probabilities_and_gradient<T, rows> for the sliver heights of a whole query tile
/// (gemm cuts 64 rows into slivers of mr − 2 to mr rows: 10-11 on AVX-512, 5-6 on AVX2), or
/// nullptr: the last tile of a sequence may cut other heights, and takes the stored path. Three
/// instances, not mr: each costs the kernel library's compile time.
template <class T>
sliver_gradient_ptr<T> sliver_probabilities_and_gradient_for(std::size_t rows) noexcept {
  constexpr std::size_t mr = gemm_tile<T>::mr;
  static_assert(mr >= 3);
  static constexpr std::array<sliver_gradient_ptr<T>, 3> table = {
      &sliver_probabilities_and_gradient<T, mr - 2>, &sliver_probabilities_and_gradient<T, mr - 1>,
      &sliver_probabilities_and_gradient<T, mr>};
  return rows + 2 >= mr && rows <= mr ? table[rows + 2 - mr] : nullptr;
}

/// Prefetches `rows` rows of `cols` elements, `stride` apart, towards L2.
template <class T>
inline void prefetch_rows(const T* a, std::size_t rows, std::size_t cols,
                          std::size_t stride) noexcept {
  constexpr std::size_t line = 64 / sizeof(T);
  for (std::size_t r = 0; r < rows; ++r, a += stride)
    for (std::size_t c = 0; c < cols; c += line) __builtin_prefetch(a + c, 0, 2);
}

/// One item: keys [j0, j0 + nk) of K/V head g in batch item b, every query head of the group.
/// dq: where this task accumulates dQ (base of the batch item's head 0), with row/head strides.
/// pair_summary: the call's summary of the pair mask.
template <class T>
void backward_item(const attention_backward_problem<T>& bp, const T* row_dots,
                   const pair_mask_summary& pair_summary, std::size_t b, std::size_t g,
                   std::size_t j0, std::size_t nk, T* dq_batch_base, std::size_t dq_head,
                   std::size_t dq_row) {
  const attention_problem<T>& p = bp.f;
  constexpr std::size_t bq = flash_backward_tiles::q_tile;
  constexpr std::size_t ld = backward_tiles<T>::ld, mr = gemm_tile<T>::mr;
  static_assert(bq % pair_mask_summary::block == 0, "a query tile is whole blocks of the summary");
  const std::size_t group = p.heads / p.kv_heads;
  backward_tiles<T>& tiles = thread_backward_tiles<T>();
  const attention_dropout<T> drop(p.dropout_rate, p.dropout_seed);
  const T* k = p.k + b * p.k_batch + g * p.k_head + j0 * p.k_row;
  const T* v = p.v + b * p.v_batch + g * p.v_head + j0 * p.v_row;
  T* dk = bp.d_k + b * p.k_batch + g * p.k_head + j0 * p.k_row;
  T* dv = bp.d_v + b * p.v_batch + g * p.v_head + j0 * p.v_row;
  zero_rows(dk, nk, p.d_k, p.k_row);
  zero_rows(dv, nk, p.d_v, p.v_row);
  // A tile of padded keys only (the tail of a shorter sequence) takes part in no pair: its dK
  // and dV rows stay 0 and it adds nothing to dQ, as the forward skips it (run_item).
  const byte_cover keys = p.key_ignore != nullptr
                              ? bytes_cover(p.key_ignore + b * p.key_ignore_batch + j0, nk)
                              : byte_cover{false, false};
  if (keys.every) return;
  // The key tile's operands, packed once for every query tile of every head of the group.
  T* const k_t = tiles.panels(backward_panel_elements(p, nk));  // K_jᵀ: B of S
  T* const v_t = k_t + packed_b_elements<T>(p.d_k, nk);         // V_jᵀ: B of dP̃
  T* const k_n = v_t + packed_b_elements<T>(p.d_v, nk);         // K_j: B of dQ
  T* const rows_b = k_n + packed_b_elements<T>(nk, p.d_k);      // dO or Q: B of dV or dK
  pack_b_panels<true>(p.d_k, nk, k, p.k_row, k_t);
  pack_b_panels<true>(p.d_v, nk, v, p.v_row, v_t);
  pack_b_panels<false>(nk, p.d_k, k, p.k_row, k_n);
  // Under a mask, the keys whose K row is not finite (attention_backward.hpp, before
  // has_masks): zeroed in K_j for dQ, and added back to the pairs no mask ignores.
  const bool masked = has_masks(p);
  std::array<std::size_t, flash_backward_tiles::k_tile> bad_keys;
  std::size_t bad_key_count = 0;
  if (masked)
    for_each_non_finite_row(k, nk, p.d_k, p.k_row, [&](std::size_t j) {
      bad_keys[bad_key_count++] = j;
      zero_packed_b_row(nk, p.d_k, j, k_n);
    });
  // Under a causal mask, query i sees key j0 only if i >= j0 − causal_offset: earlier query
  // tiles are skipped; with a window, so are the query tiles past the last query whose
  // window still holds the tile's last key.
  const std::size_t i_first = p.causal ? causal_first_query(p, j0) / bq * bq : 0;
  const std::size_t i_stop =
      p.causal ? std::min(p.seq_q, causal_query_end(p, j0 + nk - 1)) : p.seq_q;
  // Slivers no mask touches take the fused S/P and dP/dS register tiles (the masks other than
  // causal and dropout apply per element: the padding only to key tiles with a padded key,
  // the pair mask only to tiles whose pairs it ignores in part; the causal mask only to
  // slivers that cross the diagonal; wide heads do not fit a packed sliver).
  const bool narrow = p.d_k <= ld && p.d_v <= ld;
  const bool fusable = !drop.active() && narrow;
  const bool always_touched = keys.any || p.additive != nullptr || p.code.apply != nullptr;
  for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
    const T* lse = bp.lse + (b * p.heads + h) * p.seq_q;
    const T* dd = row_dots + (b * p.heads + h) * p.seq_q;
    for (std::size_t i0 = i_first; i0 < i_stop; i0 += bq) {
      const std::size_t nq = std::min(bq, p.seq_q - i0);
      const T* q = p.q + b * p.q_batch + h * p.q_head + i0 * p.q_row;
      const T* d_o = bp.d_o + b * p.o_batch + h * p.o_head + i0 * p.o_row;
      T* dq = dq_batch_base + h * dq_head + i0 * dq_row;
      // The next query tile's Q, dO and dQ rows towards L2 while this one computes: each item
      // streams every query tile of its heads through the cache, and the sliver copies and
      // the dQ product would otherwise wait for them.
      if (i0 + bq < p.seq_q) {
        const std::size_t next = std::min(bq, p.seq_q - i0 - bq);
        prefetch_rows(q + bq * p.q_row, next, p.d_k, p.q_row);
        prefetch_rows(d_o + bq * p.o_row, next, p.d_v, p.o_row);
        prefetch_rows(dq + bq * dq_row, next, p.d_k, dq_row);
      }
      // Under a causal mask, query i sees keys up to i + causal_offset: keys past the reach of
      // the tile's last query have P = 0 for all of its rows (and take nothing from dV and
      // dK), and so do keys past the reach of a sliver's last query for that sliver's rows.
      const std::size_t nk_tile = visible_keys(p, i0 + nq, j0, nk);
      if (nk_tile == 0) continue;
      // The pair mask over the tile: ignored whole, it adds nothing to dQ, dK or dV (skipped,
      // as the forward skips it); ignoring none, it leaves the tile to the fused slivers.
      // From the call's summary where it holds the mask (a query tile is whole blocks of it).
      tile_cover pairs = tile_cover::none;
      if (pair_summary.holds() && pair_summary.whole_blocks(i0, i0 + nq)) {
        pairs = pair_summary.cover(i0, i0 + nq, j0, nk_tile);
      } else if (p.ignore != nullptr) {
        const std::uint8_t* rows =
            p.ignore + b * p.ignore_batch + h * p.ignore_head + i0 * p.ignore_row + j0;
        pairs = rows_cover(nq, nk_tile, [&](std::size_t r) { return rows + r * p.ignore_row; });
      }
      if (pairs == tile_cover::all) continue;
      const bool touched = always_touched || pairs == tile_cover::some;
      T* pp = tiles.p();
      T* ds = tiles.ds();
      T* keep = drop.active() ? tiles.keep() : nullptr;
      // Rows of the tile whose Q or dO is not finite, in slivers a mask touches: zeroed in the
      // packed dO and Q of dV's and dK's products, and added back to the pairs no mask ignores.
      std::array<std::size_t, bq> bad_rows;
      std::size_t bad_row_count = 0;
      // S, P, dP̃, dS and dQ's term one register sliver of rows at a time, while its rows of
      // P and dS are in L1 (slivers of nearly equal height, as gemm cuts them).
      const std::size_t slivers = (nq + mr - 1) / mr;
      for (std::size_t s = 0, r0 = 0; s < slivers; ++s) {
        const std::size_t rows = nq / slivers + (s < nq % slivers ? 1 : 0);
        const std::size_t ns = visible_keys(p, i0 + r0 + rows, j0, nk);
        T* ps = pp + r0 * ld;
        T* dss = ds + r0 * ld;
        T* keeps = keep != nullptr ? keep + r0 * ld : nullptr;
        // A sliver that sees fewer keys than its tile meets ignored pairs in the products over
        // the tile (dV, dK) even where none of its ns keys is past a row's reach: with an
        // offset below 0 every row may see none of them.
        const bool crosses = crosses_diagonal(p, i0 + r0, rows, j0, ns) || ns < nk_tile;
        const auto fused_sliver = sliver_probabilities_and_gradient_for<T>(rows);
        // The sliver's Q and dO rows, copied with the packed stride where they fit, so that
        // the products read them in place (and no thread needs gemm's packing buffers).
        const T* q_s = q + r0 * p.q_row;
        const T* do_s = d_o + r0 * p.o_row;
        std::size_t q_ld = p.q_row, o_ld = p.o_row;
        if (narrow) {
          pack_a_sliver(rows, p.d_k, q_s, q_ld, tiles.q_sliver());
          pack_a_sliver(rows, p.d_v, do_s, o_ld, tiles.do_sliver());
          q_s = tiles.q_sliver(), do_s = tiles.do_sliver(), q_ld = o_ld = ld;
        }
        if (fusable && !touched && fused_sliver != nullptr && !crosses && ns > 0 &&
            std::none_of(lse + i0 + r0, lse + i0 + r0 + rows,
                         [](T l) { return l == -std::numeric_limits<T>::infinity(); })) {
          fused_sliver(ns, p.d_k, p.d_v, p.scale, q_s, k_t, do_s, v_t, lse + i0 + r0, dd + i0 + r0,
                       ps, dss, ld);  // P and dS
        } else {
          gemm_packed_b<T>(rows, ns, p.d_k, p.scale, q_s, q_ld, k_t, p.d_k, ps, ld, false);  // S
          tile_probabilities(p, b, h, i0 + r0, rows, j0, ns, lse, ps, ld);                   // P
          gemm_packed_b<T>(rows, ns, p.d_v, T(1), do_s, o_ld, v_t, p.d_v, dss, ld,
                           false);  // dP̃ = dO Vᵀ
          if (keeps != nullptr)
            for (std::size_t r = 0; r < rows; ++r)
              drop.factors(b, h, i0 + r0 + r, j0, ns, keeps + r * ld);
          tile_score_gradient(rows, ns, ps, dss, ld, dd + i0 + r0, keeps);  // dS
          if (crosses || touched) {
            // A pair a mask ignores has P = 0, but dS = 0 · (dP − D) is NaN where V, dO or D
            // is not (and P itself where the row's lse is NaN): such pairs bring nothing.
            if (!tile_all_finite(dss, rows, ns, ld))
              zero_ignored_pairs(p, b, h, i0 + r0, rows, j0, ns, ps, dss, ld);
            for (std::size_t r = 0; r < rows; ++r)
              if (!all_finite(q_s + r * q_ld, p.d_k) || !all_finite(do_s + r * o_ld, p.d_v))
                bad_rows[bad_row_count++] = r0 + r;
          }
        }
        for (std::size_t r = 0; r < rows; ++r) {
          if (keeps != nullptr)  // P̃ = P ∘ keep, for dV
            for (std::size_t j = 0; j < ns; ++j) ps[r * ld + j] *= keeps[r * ld + j];
          std::fill(ps + r * ld + ns, ps + r * ld + nk_tile, T(0));    // keys this sliver
          std::fill(dss + r * ld + ns, dss + r * ld + nk_tile, T(0));  // cannot see
        }
        gemm_packed_b<T>(rows, p.d_k, ns, p.scale, dss, ld, k_n, nk, dq + r0 * dq_row, dq_row,
                         true);  // dQ += scale dS K (dS read in place)
        if (bad_key_count != 0)  // the bad keys this sliver sees (they are in order)
          add_back_rows(
              p, b, h, i0 + r0, j0, false, rows, p.d_k, p.scale, dss, ld, k, p.k_row,
              bad_keys.data(),
              std::size_t(std::lower_bound(bad_keys.data(), bad_keys.data() + bad_key_count, ns) -
                          bad_keys.data()),
              dq + r0 * dq_row, dq_row);
        r0 += rows;
      }
      pack_b_panels<false>(nq, p.d_v, d_o, p.o_row, rows_b);
      for (std::size_t u = 0; u < bad_row_count; ++u)
        zero_packed_b_row(nq, p.d_v, bad_rows[u], rows_b);
      gemm_tn_tile<T>(nk_tile, p.d_v, nq, T(1), pp, rows_b, dv,
                      p.v_row);  // dV += P̃ᵀ dO
      add_back_rows(p, b, h, i0, j0, true, nk_tile, p.d_v, T(1), pp, ld, d_o, p.o_row,
                    bad_rows.data(), bad_row_count, dv, p.v_row);
      pack_b_panels<false>(nq, p.d_k, q, p.q_row, rows_b);
      for (std::size_t u = 0; u < bad_row_count; ++u)
        zero_packed_b_row(nq, p.d_k, bad_rows[u], rows_b);
      gemm_tn_tile<T>(nk_tile, p.d_k, nq, p.scale, ds, rows_b, dk,
                      p.k_row);  // dK += scale dSᵀ Q
      add_back_rows(p, b, h, i0, j0, true, nk_tile, p.d_k, p.scale, ds, ld, q, p.q_row,
                    bad_rows.data(), bad_row_count, dk, p.k_row);
    }
  }
}

/// Whether flash_attention_backward gives each (batch item, K/V head) pair a task of its own
/// (no partial dQ) rather than dealing key-tile columns to the threads.
inline bool backward_by_pairs(std::size_t pairs, std::size_t threads) noexcept {
  return pairs >= threads && (pairs % threads == 0 || pairs >= 4 * threads);
}

}  // namespace detail

/// Bytes flash_attention_backward(bp) allocates beyond its outputs with `threads` threads:
/// D, the partial dQ of tasks 1 .. T − 1 (none when each (batch item, K/V head) pair is a
/// task), the summary of a pair mask shared by every batch item and head (a byte per key and
/// block of 16 queries), and the per-thread tiles (kept for reuse; a thread that runs no item
/// makes none), with gemm's packing buffers where a head is wider than gemm_tile::kc. Exact
/// for the first call on one thread (tests/runtime/kernel/backward_memory.cpp).
template <class T>
std::size_t flash_attention_backward_bytes(const attention_backward_problem<T>& bp,
                                           std::size_t threads) noexcept {
  const attention_problem<T>& p = bp.f;
  constexpr std::size_t bk = flash_backward_tiles::k_tile;
  const std::size_t columns = p.batch * ((p.seq_kv + bk - 1) / bk);
  const std::size_t tasks = detail::backward_by_pairs(p.batch * p.kv_heads, threads)
                                ? 1
                                : std::max<std::size_t>(1, std::min(threads, columns));
  const std::size_t rows = p.batch * p.heads * p.seq_q;
  // Heads wider than gemm_tile::kc have their Q and dO slivers packed by gemm_packed_b, in
  // gemm's packing buffers (kept per thread, and shared with every other gemm call).
  const bool wide = std::max(p.d_k, p.d_v) > detail::gemm_tile<T>::kc;
  const std::size_t per_thread =
      detail::backward_tiles<T>::elements +
      detail::backward_panel_elements(p, std::min(bk, p.seq_kv)) +
      (wide ? detail::gemm_buffers<T>::a_size + detail::gemm_buffers<T>::b_size : 0);
  return (rows + (tasks - 1) * rows * p.d_k + threads * per_thread) * sizeof(T) +
         detail::pair_mask_summary::bytes(p);
}

/// The gradients dQ, dK, dV of bp.f given dO and the forward's log-sum-exp bp.lse (as
/// flash_attention writes it), on num_threads() threads, with no (seq_q × seq_kv) buffer.
/// pre: as flash_attention(bp.f); bp.lse holds (batch, heads, seq_q) row-major.
template <class T>
void flash_attention_backward(const attention_backward_problem<T>& bp) {
  const attention_problem<T>& p = bp.f;
  assert(p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && p.d_k >= 1);
  constexpr std::size_t bk = flash_backward_tiles::k_tile;
  const std::size_t sq = p.seq_q, dkw = p.d_k;
  // dQ starts at zero: every key tile adds to it. No query, no dQ (and its heads, maybe
  // strided views of a merged array, no storage to offset into); dK and dV are still zeroed.
  if (sq != 0)
    for (std::size_t b = 0; b < p.batch; ++b)
      for (std::size_t h = 0; h < p.heads; ++h)
        detail::zero_rows(bp.d_q + b * p.q_batch + h * p.q_head, sq, dkw, p.q_row);
  if (p.seq_kv == 0) return;
  std::vector<T> row_dots(p.batch * p.heads * sq);  // (B,H,SEQ_Q) D = rowsum(dO ∘ O)
  detail::backward_row_dots(bp, row_dots.data());
  const detail::pair_mask_summary pairs_summary(p);

  const std::size_t k_tiles = (p.seq_kv + bk - 1) / bk;
  const std::size_t threads = num_threads(), pairs = p.batch * p.kv_heads;
  if (detail::backward_by_pairs(pairs, threads)) {
    parallel_for(pairs, [&](std::size_t pair, std::size_t) {
      const std::size_t b = pair / p.kv_heads, g = pair % p.kv_heads;
      for (std::size_t jt = 0; jt < k_tiles; ++jt) {
        const std::size_t j0 = jt * bk, nk = std::min(bk, p.seq_kv - j0);
        detail::backward_item(bp, row_dots.data(), pairs_summary, b, g, j0, nk,
                              bp.d_q + b * p.q_batch, p.q_head, p.q_row);
      }
    });
    return;
  }
  // A task is a fixed set of (batch item, key tile) columns, each with every K/V head. The
  // task of an item does not depend on its K/V head, so every head's dQ is summed in the
  // same order: heads with equal inputs get bitwise equal gradients.
  const std::size_t columns = p.batch * k_tiles;
  const std::size_t tasks = std::min(threads, columns);
  // Partial dQ of tasks 1 .. tasks − 1: (B,H,SEQ_Q,D_K) each.
  const std::size_t part = p.batch * p.heads * sq * dkw;
  std::vector<T> partial((tasks - 1) * part, T(0));
  parallel_for(tasks, [&](std::size_t task, std::size_t) {
    for (std::size_t column = task; column < columns; column += tasks) {
      const std::size_t b = column / k_tiles, jt = column % k_tiles;
      const std::size_t j0 = jt * bk, nk = std::min(bk, p.seq_kv - j0);
      for (std::size_t g = 0; g < p.kv_heads; ++g) {
        if (task == 0)
          detail::backward_item(bp, row_dots.data(), pairs_summary, b, g, j0, nk,
                                bp.d_q + b * p.q_batch, p.q_head, p.q_row);
        else
          detail::backward_item(bp, row_dots.data(), pairs_summary, b, g, j0, nk,
                                partial.data() + (task - 1) * part + b * p.heads * sq * dkw,
                                sq * dkw, dkw);
      }
    }
  });
  if (tasks == 1) return;
  parallel_for(p.batch * p.heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / p.heads, h = t % p.heads;
    for (std::size_t i = 0; i < sq; ++i) {
      T* dq = bp.d_q + b * p.q_batch + h * p.q_head + i * p.q_row;
      for (std::size_t task = 1; task < tasks; ++task) {
        const T* src = partial.data() + (task - 1) * part + (t * sq + i) * dkw;
        for (std::size_t c = 0; c < dkw; ++c) dq[c] += src[c];
      }
    }
  });
}

// This header's entry points, declared for the program's use of the kernels
// (kernel/entry_points.hpp).
ARGUS_KERNEL_DECLARE_ENTRY_POINTS(ARGUS_KERNEL_FLASH_ATTENTION_BACKWARD_ENTRY_POINTS)

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
