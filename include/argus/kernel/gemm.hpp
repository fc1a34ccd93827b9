// argus/kernel/gemm.hpp -- kernel layer: the cache- and register-blocked matrix product.
//
// gemm_nn:  C(m x n) = alpha * A(m x k) * B(k x n)   [+ bias over rows] [+ C]
// gemm_nt:  C(m x n) = alpha * A(m x k) * B(n x k)^T [+ bias over rows] [+ C]
// gemm_tn:  C(m x n) = alpha * A(k x m)^T * B(k x n) [+ bias over rows] [+ C]
// Every projection and the unfused evaluator go through these. Single-threaded: callers
// split rows of C across threads. Pointers and run-time extents only; no expression types.
//
// Algorithm (the BLIS loop nest, with the roles of A and B chosen for row-major C, whose
// rows are vectorised along n):
//   for jc in n by nc:                  B block (kc x nc) packed once, lives in L2
//     for pc in k by kc:                k split into equal blocks of at most kc
//       for each sliver of <= mr rows:  A sliver (mr x kc) copied, lives in L1
//         for jr in nc by nr:           B panel (kc x nr), packed by the first sliver
//           micro-kernel: mr x nr of C in registers, kc rank-1 updates
// Packing copies rows of A as they are (a sliver keeps a fixed row stride kc, which the
// micro-kernel folds into constant displacements); B is packed into nr-wide panels: by the
// first sliver's micro-kernel itself as it reads a row-major B's rows in place, storing each
// k step's vectors into the panel and fetching rows two panels ahead
// (gemm_micro_kernel_direct_b_packing), through register transposes for gemm_nt, by a copy
// before its first use at the edges. Against a copy of each panel before its first use, on an
// AMD EPYC Zen 5 (family 26 model 2), one thread, the same result to the bit (`bench/ab/ab.sh
// bb07589 HEAD gemm M ROUNDS N K`): (m x k) . (k x n) with m 64-256 and models' weights
// (768 x 768 to 4096 x 4096) 1.06-1.12x faster with AVX-512, 1.02-1.08x with AVX2; m 512
// 1.02-1.03x, m 1024-4096 1.00-1.02x. A product of a few slivers (m <= 4 mr: tokens being
// decoded, a short prompt) packs no row-major B: the copy would cost about what the product
// reads, so the micro-kernel reads B's whole panels where they lie, fetching its rows ahead
// (gemm_direct_b_block, gemm_micro_kernel_direct_b; the same result to the bit; float only:
// products of double always pack, reads_b_where_it_lies), k block by k
// block over all of C's columns (for jc is dropped: few slivers keep no block of B in L2 for
// long, and B is then read in the order it lies). With several
// slivers, each panel is read by all of them before the next (the first from wherever B lies,
// the others from cache); the register tile's kernels fetch each row's next panel into L2 as
// they read the row (gemm_micro_kernel_direct_b; with AVX2's one-line panels the first sliver
// two panels at every other one, direct_b_fetch_group; against a B past L2 the slivers after the
// first fetch nothing into L1, direct_b_fetches_near, and with AVX2, where B's rows are a multiple
// of 512 bytes apart, spread that fetch over several panels, skews_b_fetch; with AVX-512, where
// B's rows are a multiple of 4 KiB apart, the first of two short slivers packs each panel for the
// second, packs_page_panels); so does a product of as few slivers on prepacked panels, each
// sliver fetching the next panel (gemm_prepacked_block, gemm_micro_kernel<..., FetchNext>; with
// more slivers, the first); one sliver of a few rows covers several panels per sweep of B's rows
// (gemm_micro_kernel_direct_b_rows; one row with 256 bytes of a row per k step, against one panel
// at a time, 1.13x faster with AVX-512, 1.59x with AVX2, whose panels are one cache line wide;
// AVX-512 now reads 1 KiB for one row, and up to 8 rows read more than a panel's 2 vectors:
// direct_b_row_vectors). Measured on an Intel Xeon (family 6 model 207), one thread, (m x 512) .
// (512 x 512), bench/ab/ab.sh, against packing: m 1 2.1x faster with AVX-512 and 2.3x with AVX2, m
// 12 1.7x (AVX2 m 6 1.6x), m 16 1.22-1.39x, m 24 1.18-1.33x, m 48 1.00-1.15x; W 2048 x 2048 (from
// L3): m 1 1.4x, m 12 1.16x, but the AVX2 kernels' m 6 0.97x. Against rows a multiple of 4 KiB
// apart, several slivers pack B unless B is large (reads_b_in_place; docs/performance.md). Against
// a B of b_from_memory_bytes or more (some from b_past_l2_bytes: a B a core's L2 does not hold,
// which a model's layers read from memory), the kernels of one sliver of a few rows fetch a whole
// call ahead (rows_fetch_a_call_ahead), and one or two rows with AVX2 or AVX-512 read B row by row
// instead (gemm_row_sweep); 7-8 rows with AVX-512 take the register tile below that
// (few_rows_read_for). Tile and block sizes, and the measurements that chose them, are in
// gemm_microkernel.hpp.
//
// Measured, one thread, fp32, on a 2-core AVX-512 Xeon VM whose measured FMA peak is
// 175 GFLOP/s (best of repeated 5 ms runs, by thread CPU time; the machine was shared):
// (1024 x 512) . (512 x 512) 160 GFLOP/s (91 %) for nn, 157 for nt; 4096 rows the same;
// 128 rows 150 (86 %: B is packed for only 128 rows); Q(1024 x 64) . K(1024 x 64)^T 155
// (88 %). With n = 64 (per-head projections, P . V) 127-140: each packed A sliver then
// serves only two panels, and copying A from L3 shows.
#pragma once

#include "argus/kernel/cpu_caches.hpp"
#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/gemm_microkernel.hpp"
#include "argus/kernel/simd.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

namespace detail {

/// Packing buffers of one thread, allocated on first use and kept: one A sliver
/// (mr x kc) and one B block (kc x nc). No heap traffic in the steady state.
template <class T>
struct gemm_buffers {
  using tile = gemm_tile<T>;
  static constexpr std::size_t a_size = tile::mr * tile::kc;
  static constexpr std::size_t b_size = tile::kc * tile::nc;
  static constexpr std::align_val_t alignment{buffer_alignment};
  T* a = nullptr;
  T* b = nullptr;

  gemm_buffers() : a(static_cast<T*>(::operator new(a_size * sizeof(T), alignment))) {
    try {
      b = static_cast<T*>(::operator new(b_size * sizeof(T), alignment));
    } catch (...) {
      ::operator delete(a, alignment);
      throw;
    }
  }
  ~gemm_buffers() {
    ::operator delete(a, alignment);
    ::operator delete(b, alignment);
  }
  gemm_buffers(const gemm_buffers&) = delete;
  gemm_buffers& operator=(const gemm_buffers&) = delete;

  static gemm_buffers& local() {
    thread_local gemm_buffers buffers;
    return buffers;
  }
};

/// Splits `total` into ceil(total / block) nearly equal pieces, each at most `block`, so
/// that no k block is a short remainder (k = 257 gives 129 + 128, not 256 + 1).
inline std::size_t balanced_block(std::size_t total, std::size_t block) noexcept {
  const std::size_t pieces = (total + block - 1) / block;
  return (total + pieces - 1) / pieces;
}

/// m rows cut into ceil(m / mr) slivers of nearly equal height (m = 128, mr = 12: 7 x 12 +
/// 4 x 11, not 10 x 12 + 1 x 8), each run by the micro-kernel of its height, so that no
/// sliver wastes FMAs on padding or runs a short, latency-bound tile: the first `tall` slivers
/// have short + 1 rows, the others short. tall_rows is short + 1 at most mr (the height to
/// look a tall sliver's kernel up for, also when there is none).
struct sliver_cut {
  std::size_t count, short_rows, tall, tall_rows;
  template <class T>
  static constexpr sliver_cut of(std::size_t m) noexcept {
    const std::size_t count = (m + gemm_tile<T>::mr - 1) / gemm_tile<T>::mr;
    return {count, m / count, m % count, std::min(m / count + 1, gemm_tile<T>::mr)};
  }
  constexpr std::size_t rows(std::size_t s) const noexcept {
    return s < tall ? short_rows + 1 : short_rows;
  }
};

/// A sliver: rows [0, rows) of `a` (row stride lda), columns [0, kc), into dst with the
/// fixed row stride gemm_tile<T>::kc, which the micro-kernel folds into its addressing.
template <class T>
inline void pack_a_sliver(std::size_t rows, std::size_t kc, const T* a, std::size_t lda,
                          T* dst) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    std::memcpy(dst + i * gemm_tile<T>::kc, a + i * lda, kc * sizeof(T));
}

/// A sliver of Rows rows from row-major Aᵀ (k x m): rows [0, Rows) of A (columns of `at`),
/// k steps [0, kc), into dst k step by k step (sliver_layout::steps: element (i, p) at
/// dst[p * Rows + i]); each step's rows are contiguous in `at`, one fixed-size copy.
template <class T, std::size_t Rows>
void pack_a_sliver_steps_of(std::size_t kc, const T* at, std::size_t ldat, T* dst) noexcept {
  for (std::size_t p = 0; p < kc; ++p, at += ldat, dst += Rows)
    std::memcpy(dst, at, Rows * sizeof(T));
}

/// pack_a_sliver_steps_of for a run-time row count 1 <= rows <= mr (a constant count makes a
/// step a couple of moves, not a loop).
template <class T>
inline void pack_a_sliver_steps(std::size_t rows, std::size_t kc, const T* at, std::size_t ldat,
                                T* dst) noexcept {
  using pack = void (*)(std::size_t, const T*, std::size_t, T*) noexcept;
  static constexpr auto table = []<std::size_t... R>(std::index_sequence<R...>) {
    return std::array<pack, sizeof...(R)>{&pack_a_sliver_steps_of<T, R + 1>...};
  }
  (std::make_index_sequence<gemm_tile<T>::mr>{});
  table[rows - 1](kc, at, ldat, dst);
}

/// B panel from row-major B(k x n): rows [0, kc), columns [0, cols) into dst(kc x nr);
/// columns [cols, nr) are zero.
template <class T>
inline void pack_b_panel_n(std::size_t kc, std::size_t cols, const T* b, std::size_t ldb,
                           T* dst) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  if (cols == tile::nr) {
    for (std::size_t p = 0; p < kc; ++p, b += ldb, dst += tile::nr)
      unroll<tile::nv>([&](auto j) __attribute__((always_inline)) {
        V::load(b + j * V::width).store(dst + j * V::width);
      });
  } else {
    for (std::size_t p = 0; p < kc; ++p, b += ldb, dst += tile::nr) {
      std::memcpy(dst, b, cols * sizeof(T));
      std::memset(dst + cols, 0, (tile::nr - cols) * sizeof(T));
    }
  }
}

/// B panel from row-major B(n x k), read transposed: element (p, j) of the panel is
/// b[j * ldb + p]. Columns [cols, nr) are zero. Whole width x width blocks go through
/// registers (transpose()); the ragged right and bottom edges are copied one by one.
template <class T>
inline void pack_b_panel_t(std::size_t kc, std::size_t cols, const T* b, std::size_t ldb,
                           T* dst) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  constexpr std::size_t w = V::width;
  const std::size_t full_p = kc / w * w;
  std::size_t j0 = 0;
  for (; j0 + w <= cols; j0 += w) {
    for (std::size_t p0 = 0; p0 < full_p; p0 += w) {
      V block[w];
      unroll<w>([&](auto q) __attribute__((always_inline)) {
        block[q] = V::load(b + (j0 + q) * ldb + p0);
      });
      transpose(block);
      unroll<w>([&](auto q) __attribute__((always_inline)) {
        block[q].store(dst + (p0 + q) * tile::nr + j0);
      });
    }
    for (std::size_t p = full_p; p < kc; ++p)
      for (std::size_t j = j0; j < j0 + w; ++j) dst[p * tile::nr + j] = b[j * ldb + p];
  }
  for (std::size_t j = j0; j < cols; ++j)
    for (std::size_t p = 0; p < kc; ++p) dst[p * tile::nr + j] = b[j * ldb + p];
  if (cols < tile::nr)
    for (std::size_t p = 0; p < kc; ++p)
      std::memset(dst + p * tile::nr + cols, 0, (tile::nr - cols) * sizeof(T));
}

/// C = (accumulate ? C : 0) + bias, the whole product when k == 0.
template <class T>
inline void gemm_empty_k(std::size_t m, std::size_t n, T* c, std::size_t ldc, const T* bias,
                         bool accumulate) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      T v = bias ? bias[j] : T(0);
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + v : v;
    }
}

/// f(u, len, dst) for each run of columns [col, col + cols) of C's row 0 that lies inside one
/// block: C's columns in blocks of c_block, block b c_block_stride elements after block b - 1
/// (gemm); columns [col + u, col + u + len) lie at dst, contiguous.
template <class T, class F>
void for_block_runs(T* c, std::size_t col, std::size_t cols, std::size_t c_block,
                    std::size_t c_block_stride, F&& f) {
  for (std::size_t u = 0; u < cols;) {
    const std::size_t at = col + u, len = std::min(cols - u, c_block - at % c_block);
    f(u, len, c + at / c_block * c_block_stride + at % c_block);
    u += len;
  }
}

/// A tile of C whose cols <= nr columns, starting at column `col` of the product, are not
/// nv vectors each inside one block: narrower than a panel (the product's last columns), or
/// with a vector straddling two of gemm_nn_split's column blocks (d_k not a multiple of the
/// vector width; a tile across two blocks whose vectors each lie in one is stored by the
/// micro-kernels vector by vector: vector_destinations). Element
/// (i, j) of the tile is at c_rows[(col + j) / c_block * c_block_stride + i * ldc +
/// (col + j) % c_block]. The tile's elements are gathered (when load_c) into a local tile,
/// the micro-kernel runs on it as it runs on C, and they are scattered back, one contiguous
/// run of columns per block and row: each element gets the very operations of a whole tile,
/// so a product's bits do not depend on where its tiles fall. bias: nullptr or the tile's
/// cols entries.
template <class T>
void gemm_gathered_tile(gemm_micro_kernel_ptr<T> kernel, std::size_t rows, std::size_t cols,
                        std::size_t kc, const T* a, const T* b, T* c_rows, std::size_t ldc,
                        std::size_t col, std::size_t c_block, std::size_t c_block_stride, T alpha,
                        const T* bias, bool load_c) noexcept {
  using tile = gemm_tile<T>;
  alignas(buffer_alignment) T out[tile::mr * tile::nr];
  alignas(buffer_alignment) T tile_bias[tile::nr];
  // f(j, len, dst): columns [j, j + len) of the tile lie at dst (row 0), contiguous.
  const auto for_runs = [&](auto&& f) {
    for_block_runs(c_rows, col, cols, c_block, c_block_stride, f);
  };
  if (load_c) {
    for_runs([&](std::size_t j, std::size_t len, const T* src) {
      for (std::size_t i = 0; i < rows; ++i)
        std::memcpy(out + i * tile::nr + j, src + i * ldc, len * sizeof(T));
    });
    // The columns past cols are computed and dropped; give them defined values.
    if (cols < tile::nr)
      for (std::size_t i = 0; i < rows; ++i)
        std::fill(out + i * tile::nr + cols, out + (i + 1) * tile::nr, T(0));
  }
  if (bias && cols < tile::nr) {  // the kernel reads nr entries of bias
    std::copy(bias, bias + cols, tile_bias);
    std::fill(tile_bias + cols, tile_bias + tile::nr, T(0));
    bias = tile_bias;
  }
  kernel(kc, a, b, contiguous_vectors<T>(out).at, tile::nr, alpha, bias, load_c);
  for_runs([&](std::size_t j, std::size_t len, T* dst) {
    for (std::size_t i = 0; i < rows; ++i)
      std::memcpy(dst + i * ldc, out + i * tile::nr + j, len * sizeof(T));
  });
}

/// A tile of cols < nr contiguous columns of C (row stride ldc) at c: the one-block case of
/// gemm_gathered_tile, with the operations of a whole tile.
template <class T>
void gemm_narrow_tile(gemm_micro_kernel_ptr<T> kernel, std::size_t rows, std::size_t cols,
                      std::size_t kc, const T* a, const T* b, T* c, std::size_t ldc, T alpha,
                      const T* bias, bool load_c) noexcept {
  gemm_gathered_tile<T>(kernel, rows, cols, kc, a, b, c, ldc, 0, cols, 0, alpha, bias, load_c);
}

/// Where `count` vectors of row 0 of C from column col lie, into dst[0 .. count): C's columns
/// in blocks of c_block, block b c_block_stride elements after block b - 1 (gemm). Whether
/// each lies inside one block: only then can a micro-kernel store it whole where it belongs.
template <class T>
bool vector_destinations(T* c, std::size_t col, std::size_t count, std::size_t c_block,
                         std::size_t c_block_stride, T** dst) noexcept {
  constexpr std::size_t width = gemm_tile<T>::width;
  // Column col + j * width lies at `offset` in the block starting at `block` (one division
  // for the tile, not one a vector).
  std::size_t offset = col % c_block;
  T* block = c + col / c_block * c_block_stride;
  bool inside = true;
  for (std::size_t j = 0; j < count; ++j, offset += width) {
    for (; offset >= c_block; offset -= c_block) block += c_block_stride;
    inside = inside && offset + width <= c_block;
    dst[j] = block + offset;
  }
  return inside;
}

/// The most slivers of A whose product with a row-major B that is not prepacked reads B
/// where it lies (gemm_direct_b_block) instead of packing it.
inline constexpr std::size_t direct_b_slivers = 4;

/// Every sliver of A's k block (element (i, p) at a[i * lda + p], or a[p * lda + i] for Layout
/// steps: Aᵀ) that `cut` makes, packed one after another into dst, mr x kc elements apart: the
/// slivers of the products that read B panel by panel (gemm_direct_b_block,
/// gemm_prepacked_block).
template <class T, sliver_layout Layout>
void pack_a_slivers(const sliver_cut& cut, std::size_t kc, const T* a, std::size_t lda,
                    T* dst) noexcept {
  constexpr std::size_t sliver_size = gemm_tile<T>::mr * gemm_tile<T>::kc;
  for (std::size_t s = 0, ir = 0; s < cut.count; ir += cut.rows(s), ++s) {
    if constexpr (Layout == sliver_layout::steps)
      pack_a_sliver_steps(cut.rows(s), kc, a + ir, lda, dst + s * sliver_size);
    else
      pack_a_sliver(cut.rows(s), kc, a + ir * lda, lda, dst + s * sliver_size);
  }
}

/// Whether a row-major B's rows are a multiple of 4 KiB apart (row stride ldb), which maps
/// the same column of every row onto the same few sets of L1.
template <class T>
constexpr bool rows_a_page_apart(std::size_t ldb) noexcept {
  return ldb * sizeof(T) % 4096 == 0;
}

/// The most slivers of A that read a row-major B in place when B's rows are a multiple of
/// 4 KiB apart and B is at least b_in_place_page_bytes (reads_b_in_place): 3 with AVX-512, 2
/// with AVX2, 1 with the portable set. Such a stride maps a panel's rows onto the same few sets
/// of L1 (and, at multiples of 16 KiB, of L2), so the slivers after the first re-read each
/// panel from L2 or L3, where packed it would be contiguous (with AVX-512, two slivers of at
/// most page_packing_rows_most rows multiply a copy the first makes: packs_page_panels). Against a
/// B that comes from memory, the first sliver reading the panels in place (each row's next panel
/// fetched ahead, gemm_micro_kernel_direct_b) outruns the packing kernel (two panels ahead) by more
/// than that; against a B held in L3 it does not. AMD EPYC Zen 5 (family 26 model 2), one thread,
/// in place ÷ packed, the same bits. AVX-512, `bench/ab/ab.sh`, three runs: m 13 / 16 / 24
/// against W 4096 x 4096 (64 MiB) 1.26-1.27 / 1.21-1.25 / 1.08-1.15x faster, into heads of
/// 128 1.11-1.20x; W of 16 MiB (4096 x 1024, 1024 x 4096, 2048 x 2048) 0.99-1.07x; W 1024 x
/// 1024 (4 MiB, in L3) m 13 / 16 / 30 0.92 / 0.97-0.98 / 0.96x, but from memory 1.12-1.30x
/// (b_in_place_page_bytes); four slivers (m 48) 0.99x. AVX2 (6-row tiles), the scratch driver
/// rotating four copies of W so that each call reads it from memory: two slivers (m
/// 7-12) 1.08-1.16x against W of 16-64 MiB (2048 x 2048 at m 12 0.97x), and 0.92-0.96x against a 16
/// MiB W multiplied over and over (in L3), 1.11-1.15x against 4096 x 4096; three or four slivers
/// 0.81-0.97x either way. The portable set's two slivers 0.89-0.94x from memory
/// (docs/performance.md, "Rows 4 KiB apart").
inline constexpr std::size_t page_stride_direct_b_slivers = simd_bytes == 64   ? 3
                                                            : simd_bytes == 32 ? 2
                                                                               : 1;

/// The least size of B (k x n elements, in bytes) that gemm takes to come from memory even
/// when one B is multiplied over and over: half the L3 of the machine that measured it, more
/// than a core's share of the L3 of most, so a B that large is read from memory whenever
/// another B came in between. Where B is that large, every few-row path below holds
/// (page_stride_direct_b_slivers, rows_fetch_a_call_ahead, sweeps_b_rows); some start at
/// b_past_l2_bytes, where a model's weights come from memory too.
inline constexpr std::size_t b_from_memory_bytes = std::size_t{16} << 20;

/// The size of a B of k x n elements, in bytes, that the rules below compare with
/// b_from_memory_bytes and b_past_l2_bytes (k x n, not k x ldb: the elements B's product reads).
template <class T>
constexpr std::size_t b_bytes(std::size_t k, std::size_t n) noexcept {
  return k * n * sizeof(T);
}

/// The least size of B (k x n elements, in bytes) that a core's L2 does not hold on the machines
/// measured (1 MiB on AMD Zen 4 and 5, 2 MiB on Intel Xeon 6): in a model, whose layers' weights
/// are read one after another, such a B comes from memory on every call, however large the L3;
/// multiplied over and over on its own (a benchmark's loop) it comes from L3. The few-row
/// kernels whose gain from memory far outweighs what they lose against L3 start here:
/// with AVX2 sweeps_b_rows (row_sweep_least_bytes) and rows_fetch_a_call_ahead
/// (b_call_ahead_bytes); with AVX-512, at 4 KiB-multiple strides, rows_fetch_a_call_ahead and
/// reads_b_in_place (b_call_ahead_page_bytes, b_in_place_page_bytes), elsewhere
/// few_rows_read_for's register tile for 7-8 rows (docs/performance.md, "A few rows against a W
/// of 2-16 MiB").
inline constexpr std::size_t b_past_l2_bytes = std::size_t{2} << 20;
static_assert(b_past_l2_bytes < b_from_memory_bytes);

/// Whether the kernels that read a row-major B (k x n, row stride ldb) from memory spread their
/// fetch of the next panels over several (direct_b_fetch_skew for the register tile's kernels
/// that fetch only into L2, packing_fetch_skew for the packing kernel): where B is
/// b_past_l2_bytes or more and its rows are a multiple of 512 bytes apart, with AVX2
/// (gemm_microkernel.hpp, direct_b_fetch_skew).
template <class T>
constexpr bool skews_b_fetch(std::size_t ldb, std::size_t k, std::size_t n) noexcept {
  return direct_b_fetch_skew > 1 && ldb * sizeof(T) % 512 == 0 &&
         b_bytes<T>(k, n) >= b_past_l2_bytes;
}

/// The most rows of one sliver that fetch a call ahead (rows_fetch_a_call_ahead) where the
/// register tile spreads its fetch over several panels (skews_b_fetch: AVX2, B of b_past_l2_bytes
/// or more, rows a multiple of 512 bytes apart): 3, so that AVX2's 4 rows, whose kernel reads 3
/// vectors (96 bytes, a line and a half) of each such row a step, take the register tile there
/// (two vectors a step, one sliver fetching only the next panels into L2, spread: as 5-6 rows).
/// AMD EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh --march=x86-64-v3`, the
/// register tile ÷ the kernel fetching a call ahead, 4 rows, the same bits, B (k x n) 768 x 768,
/// 1024 x 1024, 2560 x 2560, 4096 x 4096, 2048 x 1024, 512 x 2048: from memory
/// (`ARGUS_AB_COPIES`) 1.18-1.28x faster, from L3 (one B over and over) 1.01-1.31x; at other
/// strides (1600 x 1600, 1600 x 4800, 6400 x 1600, 3000 x 3000) 0.94-1.05x from memory, so
/// there 4 rows keep their kernel; 3 rows 0.80-0.96x (docs/performance.md, "Four rows on AVX2 at
/// 512-byte-multiple strides").
inline constexpr std::size_t skewed_far_rows_most = 3;

/// Whether one sliver of `rows` rows (at most direct_b_rows_most) against a row-major B (k x n,
/// row stride ldb) takes gemm_micro_kernel_direct_b_rows<..., FromMemory>, which fetches each
/// row's next vectors a whole call ahead into L2 instead of its rows a few steps ahead into
/// L1: where B is b_call_ahead_bytes or more, for rows_from_memory_any_stride rows or more,
/// and from direct_b_rows_from_memory_least where B's rows are a multiple of 4 KiB apart
/// (whose rows the L1 fetch crowds into a few sets); no more than skewed_far_rows_most where the
/// register tile spreads its fetch. With AVX-512, 4 rows at any stride and 3 at such strides;
/// with AVX2, whose kernels read fewer vectors of a row a step, 3 rows at any stride (4 but at
/// 512-byte-multiple strides); the portable set every row count. Fewer rows read such a B row by
/// row on AVX2 and AVX-512 (sweeps_b_rows, which gemm asks first; the figures below for one and two
/// rows predate it). AMD EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh [--march=...]`
/// before ÷ after, the same bits. AVX-512: W 4096 x 4096 m 2-8 1.08-1.49x faster, (8192 x 2048) and
/// (16384 x 1024) m 2-3 1.12-1.22x, into heads of 128 m 4 1.42x, 4000 x 4000 m 4-8 1.15-1.48x, 2560
/// x 2560 m 8 1.78x; not taken: rows not a multiple of 4 KiB apart at m 2-3 (0.92-0.97x: 4000 x
/// 4000, 3000 wide) and one row (0.92-0.96x in a scratch variant). AVX2: 4096 x 4096 m
/// 1-4 1.35-1.72x, 4000 x 4000 m 1 / 2 / 3 / 4 1.12 / 1.14 / 1.92 / 2.05x, 2560 x 2560 m
/// 1-4 1.12-2.26x, 3000 wide m 1-3 1.13-1.68x. The portable set: m 1-4 1.53-2.46x. W below 16 MiB
/// and the MHA forward's kernels unchanged (docs/performance.md, "A few rows against a large W
/// fetch the next run"). This and b_call_ahead_bytes hold on a core of 48 KiB of L1d or more
/// (cpu_caches.hpp's roomy_l1d); on a smaller one AVX-512 takes AVX2's choice for up to
/// direct_b_rows_near_most rows (rows_fetch_a_call_ahead's `roomy_l1`).
inline constexpr std::size_t rows_from_memory_any_stride =
    simd_bytes == 64 ? 4 : direct_b_rows_from_memory_least;

/// The least size of B (k x n elements, in bytes) against which rows_fetch_a_call_ahead holds:
/// b_past_l2_bytes with AVX2, whose 3-4 rows (4 and 3 vectors of a row a step) fetching a call
/// ahead measured, AMD EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh
/// --march=x86-64-v3`, the same bits, B (k x n) 768 x 768, 1024 x 1024, 1600 x 1600, 1024 x
/// 2048, 2048 x 512 (2-10 MiB): from memory (`ARGUS_AB_COPIES=48`) 1.46-1.83x faster, from L3
/// (one B over and over) 0.78-1.47x (1.10-1.47 at 4 KiB-multiple strides, 0.78-1.09 elsewhere);
/// b_from_memory_bytes with AVX-512 (3-6 rows elsewhere than at such strides: 1.00-1.07x from
/// memory, 0.66-0.97x from L3) and the portable set (not measured below it).
inline constexpr std::size_t b_call_ahead_bytes =
    simd_bytes == 32 ? b_past_l2_bytes : b_from_memory_bytes;

/// b_call_ahead_bytes where B's rows are a multiple of 4 KiB apart: b_past_l2_bytes with AVX-512
/// as well, whose 3-8 rows there (which the L1 fetch crowds into a few sets) measured, AMD EPYC
/// Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh`, the same bits, B (k x n) 1024 x
/// 1024, 512 x 1024, 1024 x 2048, 768 x 3072, 2048 x 1024 (2-9 MiB): from memory
/// (`ARGUS_AB_COPIES=48`) 1.07-1.34x faster, from L3 (one B over and over) 0.92-1.40x (7-8 rows,
/// against the register tile: 1.24-1.31x; 4 rows 0.92-1.18x).
inline constexpr std::size_t b_call_ahead_page_bytes =
    simd_bytes >= 32 ? b_past_l2_bytes : b_from_memory_bytes;

/// Whether AVX-512 on a core of `roomy_l1` false (less than 48 KiB of L1d, cpu_caches.hpp's
/// roomy_l1d) takes AVX2's choices for a few rows against a B of b_past_l2_bytes or more, which
/// a model reads from memory: rows_fetch_a_call_ahead from direct_b_rows_from_memory_least to
/// direct_b_rows_near_most rows at any stride, and the row sweep (row_sweep_least_bytes), where
/// the kernels that fetch into L1 (rows_long's 6 KiB of each row ahead) lose to those fetching
/// into L2. AMD EPYC Zen 4 (family 25 model 17, 32 KiB L1d), one thread, `bench/ab/ab.sh`, the
/// same bits, before ÷ after: B 768 x 768 and 1600 x 1600 from memory (`ARGUS_AB_COPIES=48`)
/// m 1-2 (the sweep) 1.47-1.80x faster, m 3-6 (a call ahead) 1.28-2.12x, m 3 against 2560 x
/// 2560 and 4000 x 4000 1.35x and 1.56x; from L3 (one B over and over) 0.93-1.13x; GPT-2 XL's
/// layer (`bench_models`) at n 2 1.40x and 1.13x (1 and 2 threads), at n 4 2.15x and 1.74x,
/// at n 8 (the register tile) 1.02-1.03x. Not 7-8 rows
/// (a call ahead 0.90-0.96x of the register tile from memory), nor on Zen 5 (48 KiB), where
/// AVX-512's rows a call ahead took 1.00-1.07x from memory and 0.66-0.97x from L3
/// (docs/performance.md, "Fetching into L1 or L2").
inline constexpr bool far_reads_follow_l1d = simd_bytes == 64;

template <class T>
constexpr bool rows_fetch_a_call_ahead(std::size_t rows, std::size_t ldb, std::size_t k,
                                       std::size_t n, bool roomy_l1) noexcept {
  const bool page = rows_a_page_apart<T>(ldb);
  const bool tight = far_reads_follow_l1d && !roomy_l1 && rows <= direct_b_rows_near_most<T>;
  const std::size_t least_bytes = page    ? b_call_ahead_page_bytes
                                  : tight ? b_past_l2_bytes
                                          : b_call_ahead_bytes;
  return b_bytes<T>(k, n) >= least_bytes &&
         rows >= (page || tight ? direct_b_rows_from_memory_least : rows_from_memory_any_stride) &&
         (rows <= skewed_far_rows_most || !skews_b_fetch<T>(ldb, k, n));
}

/// How one sliver of A of `rows` rows reads a row-major B (k x n, row stride ldb) in place
/// (few_rows_read, gemm_microkernel.hpp), on a core whose L1d is roomy_l1 (cpu_caches.hpp's
/// roomy_l1d) or not.
template <class T>
constexpr few_rows_read few_rows_read_for(std::size_t rows, std::size_t ldb, std::size_t k,
                                          std::size_t n, bool roomy_l1) noexcept {
  if (rows > direct_b_rows_most<T>) return few_rows_read::register_tile;
  if (rows > skewed_far_rows_most && skews_b_fetch<T>(ldb, k, n))
    return few_rows_read::register_tile;
  if (rows_fetch_a_call_ahead<T>(rows, ldb, k, n, roomy_l1)) return few_rows_read::rows_far;
  if (b_bytes<T>(k, n) < b_past_l2_bytes) return few_rows_read::rows_near;
  if (rows > direct_b_rows_near_most<T>) return few_rows_read::register_tile;
  return rows_long_ahead_set && ldb * sizeof(T) % 2048 != 0 ? few_rows_read::rows_long
                                                            : few_rows_read::rows_near;
}

/// The least size of B (k x n elements, in bytes) whose rows, a multiple of 4 KiB apart,
/// page_stride_direct_b_slivers slivers read in place: b_past_l2_bytes with AVX-512, whose two
/// and three slivers (m 13-24) measured, the machine, tool and B of b_call_ahead_page_bytes: from
/// memory 1.12-1.30x faster, from L3 0.92-1.04x (13 rows 0.92-0.95); b_from_memory_bytes with
/// AVX2 (its two slivers from 2 MiB: 1.14-1.17x from memory, 0.84-0.90x from L3) and the portable
/// set.
inline constexpr std::size_t b_in_place_page_bytes =
    simd_bytes == 64 ? b_past_l2_bytes : b_from_memory_bytes;

/// Whether gemm reads a row-major B (k x n, row stride ldb) in place for `slivers` slivers of
/// A: one sliver always (it reads each panel once); up to direct_b_slivers when B's rows are
/// not a multiple of 4 KiB apart; when they are, up to page_stride_direct_b_slivers for a B
/// of b_in_place_page_bytes or more, one for a smaller one.
template <class T>
constexpr bool reads_b_in_place(std::size_t slivers, std::size_t ldb, std::size_t k,
                                std::size_t n) noexcept {
  if (slivers == 1) return true;
  if (!rows_a_page_apart<T>(ldb)) return slivers <= direct_b_slivers;
  return b_bytes<T>(k, n) >= b_in_place_page_bytes && slivers <= page_stride_direct_b_slivers;
}

/// Whether products of T read a row-major B where it lies for a few slivers of A
/// (gemm_direct_b_block: reads_b_in_place) and row by row for one or two rows (gemm_row_sweep:
/// sweeps_b_rows), with the kernels of those paths: float. Products of double take the loop
/// nest's packed register tile whatever their shape. double is argus's verification type (the
/// reference evaluator's, the golden and differential tests'), whose decode-shaped products no
/// benchmark measures; those paths' kernels
/// (gemm_micro_kernel_direct_b, _direct_b_rows, _fetching_rows, gemm_row_sweep: 38 + 36 + 8 + 2
/// instantiations with AVX-512) were a third of double's kernel code, compiled in every
/// configuration of the tests: under ASan+UBSan 6.83 against 4.58 MB, 147 against 94.5 s to
/// compile side by side (docs/contributing/testing.md, item 16). The rules above hold for double
/// as written; gemm only does not ask them.
template <class T>
inline constexpr bool reads_b_where_it_lies = !std::is_same_v<T, double>;

/// The sets whose register-tile kernels reading B in place may fetch nothing into L1
/// (direct_b_fetches_near): AVX2 and AVX-512.
inline constexpr bool direct_b_far_set = simd_bytes >= 32;

/// Whether sliver `sliver` of `slivers` of a product reading a row-major B (k x n) in place with
/// the register tile (gemm_micro_kernel_direct_b) fetches each row of B into L1 a few steps ahead
/// as well as the next panel's rows into L2. Against a B under b_past_l2_bytes every sliver does;
/// against a larger one (from memory in a model), with AVX2 and AVX-512 (direct_b_far_set), the
/// slivers after the first of several fetch only into L2: they find the panel in L2 where the
/// first left it, and their L1 fetch only takes load slots from a k step of few cycles (AVX2's
/// 4-row tile: 8 multiply-adds, 2 loads of B, 4 broadcasts, 4 fetches). With AVX2 one sliver
/// alone (m 5-6) fetches only into L2 too. The first of several keeps its L1 fetch, as does one
/// sliver with AVX-512 (m 9-12 0.96-1.04x without it) and every sliver of the portable set (its
/// later slivers 0.97-0.99x without it, one sliver 0.78-0.97x). AMD EPYC Zen 5 (family 26 model
/// 2), one thread, `bench/ab/ab.sh [--march=x86-64-v3]`, old ÷ new, the same bits, B (k x n)
/// 768 x 768 to 2560 x 2560 and 6400 x 1600 from memory (`ARGUS_AB_COPIES=48`): AVX2 m 5-6
/// 1.02-1.07x faster, m 7-8 against rows 6400 bytes apart (n 1600, GPT-2 XL's) 1.16-1.28x,
/// elsewhere m 7-24 0.98-1.03x; AVX-512 m 13-16 1.00-1.08x, m 24-48 0.98-1.04x. From L3 (one B
/// over and over) 0.97-1.04x, but AVX2's m 6 against 768 x 768 (2.25 MiB, partly in L2 in such a
/// loop) 0.92x. GPT-2 XL's layer at n 8, AVX2: 2.18-2.25 -> 1.67-1.89 ms on 1 thread,
/// 1.05-1.11 -> 1.00-1.02 ms on 2 (docs/performance.md, "Later slivers fetch only into L2").
/// Whether one sliver alone keeps its L1 fetch against a B of b_past_l2_bytes or more
/// (direct_b_fetches_near): AVX-512's; so there the kernels that fetch only into L2 serve later
/// slivers of several alone (gemm_direct_b_block instantiates them from mr / 2 rows).
inline constexpr bool one_sliver_fetches_near = simd_bytes == 64;

template <class T>
constexpr bool direct_b_fetches_near(std::size_t sliver, std::size_t slivers, std::size_t k,
                                     std::size_t n) noexcept {
  if (!direct_b_far_set || b_bytes<T>(k, n) < b_past_l2_bytes) return true;
  return sliver == 0 && (slivers > 1 || one_sliver_fetches_near);
}

/// The most rows of the first of two slivers that packs each panel as it reads it
/// (packs_page_panels): 9, so 13-18 rows with AVX-512.
inline constexpr std::size_t page_packing_rows_most = 9;

/// Whether this set's first sliver of two packs pages for the second (packs_page_panels): AVX-512
/// alone, so no other set instantiates the second's kernels (page_fetching_kernel).
inline constexpr bool page_packing_set = simd_bytes == 64;

/// Whether gemm_direct_b_block's first sliver of a product of `m` rows packs each panel of a
/// row-major B (row stride ldb) as it reads it in place (gemm_micro_kernel_direct_b_packing,
/// fetching the next panel's rows), the other slivers multiplying the copy and fetching the next
/// panel of B where it lies (gemm_micro_kernel_fetching_rows): with AVX-512, two slivers whose
/// first has at most page_packing_rows_most rows, where B's rows are a multiple of 4 KiB apart
/// (which map a panel's rows onto a few sets of L1 and L2: the later slivers re-read it in place
/// from L2 or L3, the copy from L1). AMD EPYC Zen 5 (family 26 model 2), one thread,
/// `bench/ab/ab.sh`, the same bits, B (k x n) 4096 x 4096, 1024 x 1024, 2048 x 2048, 4096 x
/// 1024, 1024 x 4096, 512 x 1024: from memory (`ARGUS_AB_COPIES`) m 13 1.13-1.19x faster, m 16
/// 1.07-1.10x, m 18 1.03-1.06x; from L3 (one B over and over) m 13 1.15-1.20x, m 16 1.08-1.09x,
/// m 18 1.02-1.04x. Not taken, in a trial: m 20-22 0.96-1.02x and m 24 (12 rows a sliver, the
/// packing's stores no longer hidden) 0.94-1.02x, three slivers 0.99-1.03x, AVX2 (whose later
/// slivers spread their fetch, skews_b_fetch) 0.89-1.04x (docs/performance.md, "Two slivers at
/// 4 KiB-multiple strides: the first packs for the second").
template <class T>
constexpr bool packs_page_panels(std::size_t m, std::size_t ldb) noexcept {
  const sliver_cut cut = sliver_cut::of<T>(m);
  return page_packing_set && cut.count == 2 && cut.rows(0) <= page_packing_rows_most &&
         rows_a_page_apart<T>(ldb);
}

/// The kernel of a sliver after the first where that first packs each panel
/// (packs_page_panels), for its run-time height: two slivers of m > mr rows, the first of at
/// most page_packing_rows_most, leave the second mr / 2 to page_packing_rows_most rows, the
/// only heights instantiated, and only with AVX-512, the one set that packs pages so. Every
/// height on every set was 16 kernels more with AVX-512 and 12 with AVX2, each element type,
/// none of them ever called: 3-4 % of the kernels' code (Clang 14's ASan+UBSan build of the
/// float kernels, Zen 5: 152.8 -> 143.1 s with AVX-512, 63.5 -> 62.4 s with AVX2).
template <class T, sliver_layout Layout>
gemm_micro_kernel_fetching_rows_ptr<T> page_fetching_kernel(std::size_t rows) noexcept {
  if constexpr (page_packing_set) {
    static_assert(gemm_tile<T>::mr / 2 <= page_packing_rows_most &&
                  page_packing_rows_most <= gemm_tile<T>::mr);
    return gemm_micro_kernel_fetching_rows_for<T, Layout, gemm_tile<T>::mr / 2,
                                               page_packing_rows_most>(rows);
  } else {
    assert(false && "only AVX-512 packs pages for later slivers (packs_page_panels)");
    return (void)rows, nullptr;
  }
}

/// How gemm_direct_b_block's register-tile kernels fetch B: the first sliver and those after it
/// into L1 as well as L2 or into L2 only (direct_b_fetches_near), and those fetching only into
/// L2 spread over several panels or not (skews_b_fetch); whether the first packs each panel for
/// the others (packs_page_panels).
struct direct_b_fetching {
  bool first_near, later_near, skewed, packs_pages;
};

/// The columns of a k block n wide that one sliver's rows kernel covers
/// (gemm_micro_kernel_direct_b_rows, row_vectors vectors of each row of B a call): as many calls
/// as leave the columns after them whole panels for the register tile, but for the last
/// vector's (partial, or odd where no count of calls leaves whole panels). 7 and 8 rows with
/// AVX-512 and 4 with AVX2 read an odd count of vectors a call: of n 1024 with AVX-512, 20
/// calls of 48 columns and two panels, not 21 and half a panel, which gemm_direct_b_block
/// packs and multiplies apart (gemm_gathered_tile; on the Zen 5 machine 8 rows against
/// 1024 x 1024 from L3 took 1.08x as long with that half panel in every k block).
template <class T>
constexpr std::size_t rows_kernel_columns(std::size_t n, std::size_t row_vectors) noexcept {
  static_assert(gemm_tile<T>::nv == 2, "whole panels: an even count of vectors");
  const std::size_t vectors = n / gemm_tile<T>::width;
  std::size_t calls = vectors / row_vectors;
  if (calls > 0 && (vectors - calls * row_vectors) % 2 != 0 && row_vectors % 2 != 0) --calls;
  return calls * row_vectors * gemm_tile<T>::width;
}

/// One k block (kc deep) of C = alpha A B over all of C's n columns (gemm runs a product of few
/// slivers k block by k block) for at most direct_b_slivers slivers of A, with
/// a row-major B read where it lies: a is A's k block (element (i, p) at a[i * lda + p], or
/// a[p * lda + i] for Layout steps: Aᵀ), b is B's (row p, column 0) element. The slivers are packed
/// first, one after another, into the B buffer (which this path does not use); then each panel of B
/// is read in place by every sliver in turn, so that the first reads it from wherever B lies (its
/// rows fetched ahead) and the others from cache (L1, or L2 where B's row stride maps the panel's
/// rows onto few sets of L1). A tile whose vectors each lie in one of C's column blocks is
/// stored vector by vector (vector_destinations); one narrower than a panel, or with a vector
/// straddling two blocks, packs its panel (after the slivers) and goes through
/// gemm_gathered_tile. For one sliver of at most direct_b_rows_most rows, several panels at once
/// where rows_read (few_rows_read_for) says (gemm_micro_kernel_direct_b_rows; rows_far: those
/// kernels fetching a whole call ahead). fetching: how the register tile's kernels fetch B.
/// Each element of C gets the packed product's operations in the same order: the same bits.
template <class T, sliver_layout Layout>
void gemm_direct_b_block(std::size_t m, std::size_t kc, std::size_t n, const T* a, std::size_t lda,
                         const T* b, std::size_t ldb, T* c, std::size_t ldc, std::size_t c_block,
                         std::size_t c_block_stride, T alpha, const T* bias, bool load_c,
                         few_rows_read rows_read, direct_b_fetching fetching,
                         gemm_buffers<T>& buffers) noexcept {
  using tile = gemm_tile<T>;
  static_assert((direct_b_slivers * tile::mr + tile::nr) * tile::kc <= gemm_buffers<T>::b_size,
                "the slivers and one panel must fit the B buffer");
  constexpr std::size_t sliver_size = tile::mr * tile::kc;
  const sliver_cut cut = sliver_cut::of<T>(m);
  const std::size_t slivers = cut.count;
  assert(slivers <= direct_b_slivers);
  T* const packed = buffers.b;
  T* const panel = buffers.b + direct_b_slivers * sliver_size;
  pack_a_slivers<T, Layout>(cut, kc, a, lda, packed);
  // The kernels that fetch only into L2 serve, with AVX-512, only the slivers after the first
  // of several (direct_b_fetches_near), of mr / 2 rows or more (sliver_cut): none is
  // instantiated for a lower height (10 of its 48 register-tile kernels an element type); with
  // AVX2 one sliver alone takes them too. With first_direct's below (AVX2: 12 of 60), Clang
  // 14's ASan+UBSan build of the float kernels on Zen 5 took 170.3 -> 167.7 s (AVX-512) and
  // 52.9 -> 50.0 s (AVX2), side by side.
  constexpr std::size_t far_least = one_sliver_fetches_near ? tile::mr / 2 : 1;
  const auto direct_for = [&](std::size_t rows, bool fetch_near) {
    if constexpr (direct_b_far_set) {  // no such kernel instantiated where none is taken
      constexpr std::size_t skew = direct_b_fetch_skew;
      if constexpr (skew > 1)
        if (!fetch_near && fetching.skewed)
          return gemm_micro_kernel_direct_b_for<T, Layout, 1, false, skew, far_least>(rows);
      if (!fetch_near)
        return gemm_micro_kernel_direct_b_for<T, Layout, 1, false, 1, far_least>(rows);
    }
    assert(fetch_near);
    return gemm_micro_kernel_direct_b_for<T, Layout>(rows);
  };
  // The first sliver's kernel (cut.rows(0): the tall height if any), and those of the others
  // (the taller ones: those before cut.tall, so none of one or two slivers).
  assert(slivers == 1 || fetching.first_near);  // first_direct's kernels below fetch near
  const auto first = direct_for(cut.rows(0), fetching.first_near);
  const auto short_direct = slivers > 1 ? direct_for(cut.short_rows, fetching.later_near) : nullptr;
  const auto tall_direct = cut.tall > 1 ? direct_for(cut.tall_rows, fetching.later_near) : nullptr;
  // The first of several slivers, which reads B's rows from wherever B lies, fetches the
  // next direct_b_fetch_group panels' rows at every direct_b_fetch_group-th panel and none at
  // the others; [0]: the kernel that fetches none, [1]: the group's.
  constexpr std::size_t group = direct_b_fetch_group<T>;
  // (Of several slivers: the first is packing_rows_lowest rows or more.)
  const auto first_direct = [&] {
    using ptr = gemm_micro_kernel_direct_b_ptr<T>;
    constexpr std::size_t least = packing_rows_lowest<T>;
    if constexpr (group > 1)
      if (slivers > 1)
        return std::array<ptr, 2>{
            gemm_micro_kernel_direct_b_for<T, Layout, 0, true, 1, least>(cut.rows(0)),
            gemm_micro_kernel_direct_b_for<T, Layout, group, true, 1, least>(cut.rows(0))};
    return std::array<ptr, 2>{};
  }();
  // One sliver of at most direct_b_rows_most rows (rows_read): several panels at once where
  // each vector of the rows lies inside one block of C's columns (it starts at a multiple of
  // the width: blocks of a multiple of it, or one block).
  using rows_pick = std::pair<gemm_micro_kernel_direct_b_rows_ptr<T>, std::size_t>;
  const auto [rows_kernel, row_vectors] =
      slivers == 1 && rows_read != few_rows_read::register_tile
          ? gemm_micro_kernel_direct_b_rows_for<T, Layout>(m, rows_read)
          : rows_pick{nullptr, 0};
  const std::size_t row_cols = row_vectors * tile::width;
  const std::size_t rows_end = rows_kernel ? rows_kernel_columns<T>(n, row_vectors) : 0;
  // Where the first sliver packs each whole panel for the others (fetching.packs_pages): its
  // kernel, and theirs, which fetch the next panel of B where it lies.
  const auto packing =
      fetching.packs_pages ? gemm_micro_kernel_packing_for<T, Layout>(cut.rows(0)) : nullptr;
  // (The slivers after the first that are taller: those before cut.tall, none of two.)
  const auto tall_fetching = fetching.packs_pages && cut.tall > 1
                                 ? page_fetching_kernel<T, Layout>(cut.tall_rows)
                                 : nullptr;
  const auto short_fetching =
      fetching.packs_pages ? page_fetching_kernel<T, Layout>(cut.short_rows) : nullptr;
  // panel_index counts the passes; with several slivers (the only use of it) each pass is one
  // panel, so it is the index of the panel at jr.
  for (std::size_t jr = 0, panel_index = 0; jr < n; ++panel_index) {
    const std::size_t col = jr, cols = std::min(tile::nr, n - jr);
    const T* tile_bias = bias ? bias + jr : nullptr;
    if (rows_kernel && jr + row_cols <= rows_end) {
      T* row[direct_b_row_vectors<T, 1>];
      if (vector_destinations(c, col, row_vectors, c_block, c_block_stride, row)) {
        rows_kernel(kc, packed, b + jr, ldb, row, ldc, alpha, tile_bias, load_c);
        jr += row_cols;
        continue;
      }
    }
    T* vectors[tile::nv];
    const bool whole =
        cols == tile::nr && vector_destinations(c, col, tile::nv, c_block, c_block_stride, vectors);
    if (packing && whole) {
      // The next panel's rows, fetched by every sliver (an integer address: a hint, which past
      // the block's last panel may lie past B).
      const std::uintptr_t next = reinterpret_cast<std::uintptr_t>(b + jr) + tile::nr * sizeof(T);
      packing(kc, packed, b + jr, ldb, vectors, ldc, alpha, tile_bias, load_c, panel, next);
      for (std::size_t s = 1, ir = cut.rows(0); s < slivers; ir += cut.rows(s), ++s) {
        T* sliver_vectors[tile::nv];
        for (std::size_t j = 0; j < tile::nv; ++j) sliver_vectors[j] = vectors[j] + ir * ldc;
        (s < cut.tall ? tall_fetching : short_fetching)(kc, packed + s * sliver_size, panel, ldb,
                                                        sliver_vectors, ldc, alpha, tile_bias,
                                                        load_c, next);
      }
      jr += tile::nr;
      continue;
    }
    if (!whole) pack_b_panel_n(kc, cols, b + jr, ldb, panel);
    for (std::size_t s = 0, ir = 0; s < slivers; ir += cut.rows(s), ++s) {
      const T* sliver = packed + s * sliver_size;
      if (whole) {
        T* sliver_vectors[tile::nv];
        for (std::size_t j = 0; j < tile::nv; ++j) sliver_vectors[j] = vectors[j] + ir * ldc;
        const auto direct = s > 0                      ? (s < cut.tall ? tall_direct : short_direct)
                            : group > 1 && slivers > 1 ? first_direct[panel_index % group == 0]
                                                       : first;
        direct(kc, sliver, b + jr, ldb, sliver_vectors, ldc, alpha, tile_bias, load_c);
      } else
        gemm_gathered_tile<T>(gemm_micro_kernel_for<T, Layout>(cut.rows(s)), cut.rows(s), cols, kc,
                              sliver, panel, c + ir * ldc, ldc, col, c_block, c_block_stride, alpha,
                              tile_bias, load_c);
    }
    jr += tile::nr;
  }
}

/// The most slivers of A whose product on prepacked panels runs panel by panel
/// (gemm_prepacked_block) rather than sliver by sliver over a whole B block: as many as read a
/// row-major B in place (gemm_direct_b_block, panel by panel too).
inline constexpr std::size_t prepacked_panel_slivers = direct_b_slivers;

/// Whether gemm runs a product of `slivers` slivers of A on prepacked panels panel by panel.
constexpr bool prepacked_by_panel(std::size_t slivers) noexcept {
  return slivers <= prepacked_panel_slivers;
}

/// One k block (kc deep) of C = alpha A B over all of C's n columns (as gemm runs it: k block
/// by k block) for at most prepacked_panel_slivers slivers of A, on prepacked panels
/// (pack_b_blocked): the block's panels lie one after another from `panels`, kc x nr each. The
/// slivers are packed first into the B buffer (which a product on prepacked panels does not use);
/// then each panel is multiplied by every sliver in turn, each fetching the next panel into L2 as
/// it goes (gemm_micro_kernel's FetchNext): the first reads the panel from wherever B lies, the
/// others from cache. Few slivers are bound by the memory: sliver by sliver over a 512 KiB block
/// (gemm's loop nest for more), the first sliver's pass asked for the next panel's lines faster
/// than the memory brought them and the others then ran on the block in L2 with nothing
/// streaming; so, with every sliver asking for the rest, the memory streams under all their
/// products. AMD EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh [--march=...]
/// packed M 20 N K`, W (768 x 768 to 4096 x 4096) from memory (`ARGUS_AB_COPIES`), old ÷ new,
/// the same bits: AVX-512 m 13-20 (two slivers under 12 rows) 1.10-1.29x faster, m 24-48
/// 1.01-1.05x; AVX2 m 7-8 1.13-1.18x, m 13 1.05-1.09x, m 12 and 16-24 0.99-1.04x; W in L2 or L3
/// 0.985-1.04x; five to sixteen slivers panel by panel 0.99-1.02x (not taken). GQA 4096's layer
/// at n 16 on prepacked weights, AVX-512: 7.96-8.36 -> 6.69-6.78 ms (docs/performance.md, "Few
/// slivers on prepacked panels run panel by panel"). Each element of C gets the same operations
/// in the same order either way: the same bits.
template <class T, sliver_layout Layout>
void gemm_prepacked_block(std::size_t m, std::size_t kc, std::size_t n, const T* a, std::size_t lda,
                          const T* panels, T* c, std::size_t ldc, std::size_t c_block,
                          std::size_t c_block_stride, T alpha, const T* bias, bool load_c,
                          gemm_buffers<T>& buffers) noexcept {
  using tile = gemm_tile<T>;
  static_assert(prepacked_panel_slivers * tile::mr * tile::kc <= gemm_buffers<T>::b_size,
                "the slivers must fit the B buffer");
  constexpr std::size_t sliver_size = tile::mr * tile::kc;
  const sliver_cut cut = sliver_cut::of<T>(m);
  const std::size_t slivers = cut.count;
  assert(prepacked_by_panel(slivers));
  T* const packed = buffers.b;
  pack_a_slivers<T, Layout>(cut, kc, a, lda, packed);
  const auto tall_kernel = gemm_micro_kernel_for<T, Layout, true>(cut.tall_rows);
  const auto short_kernel = gemm_micro_kernel_for<T, Layout, true>(cut.short_rows);
  for (std::size_t jr = 0; jr < n; jr += tile::nr) {
    const std::size_t col = jr, cols = std::min(tile::nr, n - jr);
    const T* tile_bias = bias ? bias + jr : nullptr;
    const T* panel = panels + jr * kc;
    T* vectors[tile::nv];
    const bool whole =
        cols == tile::nr && vector_destinations(c, col, tile::nv, c_block, c_block_stride, vectors);
    for (std::size_t s = 0, ir = 0; s < slivers; ir += cut.rows(s), ++s) {
      const T* sliver = packed + s * sliver_size;
      const auto kernel = s < cut.tall ? tall_kernel : short_kernel;
      if (whole) {
        T* sliver_vectors[tile::nv];
        for (std::size_t j = 0; j < tile::nv; ++j) sliver_vectors[j] = vectors[j] + ir * ldc;
        kernel(kc, sliver, panel, sliver_vectors, ldc, alpha, tile_bias, load_c);
      } else
        gemm_gathered_tile<T>(kernel, cut.rows(s), cols, kc, sliver, panel, c + ir * ldc, ldc, col,
                              c_block, c_block_stride, alpha, tile_bias, load_c);
    }
  }
}

/// Columns of a matrix n wide once packed: n rounded up to whole panels.
template <class T>
constexpr std::size_t packed_width(std::size_t n) noexcept {
  using tile = gemm_tile<T>;
  return (n + tile::nr - 1) / tile::nr * tile::nr;
}

/// B (k x n, row-major, row stride ldb) packed as gemm's loop nest reads it, for every call:
/// k cut into the blocks gemm cuts it into (balanced_block(k, kc)), and block [pc, pc + kc)
/// at dst + pc * packed_width(n), holding the ceil(n / nr) panels of (kc x nr) one after
/// another, panel q at q * nr * kc (columns past n zero). So the panels of a k block, over
/// any range of whole panels, lie together, as gemm's own packed block does.
template <class T>
void pack_b_blocked(std::size_t k, std::size_t n, const T* b, std::size_t ldb, T* dst) noexcept {
  using tile = gemm_tile<T>;
  const std::size_t kc_block = balanced_block(k, tile::kc), width = packed_width<T>(n);
  for (std::size_t pc = 0; pc < k; pc += kc_block) {
    const std::size_t kc = std::min(kc_block, k - pc);
    for (std::size_t j = 0; j < n; j += tile::nr)
      pack_b_panel_n(kc, std::min(tile::nr, n - j), b + pc * ldb + j, ldb,
                     dst + pc * width + j * kc);
  }
}

/// Rows of B that gemm_row_sweep runs through together: each vector of the partial sums is
/// loaded and stored once per this many rows, each row read as one contiguous run.
inline constexpr std::size_t row_sweep_rows = 8;

/// Columns of one pass of gemm_row_sweep, over its rows of A: their partial sums (16 KiB)
/// stay in L1.
template <class T>
inline constexpr std::size_t row_sweep_columns = std::size_t{16384} / sizeof(T);

/// The least size of B (k x n elements, in bytes) that sweeps_b_rows takes: b_past_l2_bytes
/// with AVX2, b_from_memory_bytes with AVX-512. AMD EPYC Zen 5 (family 26 model 2),
/// `bench/ab/ab.sh [--march=x86-64-v3]`, one thread, the sweep ÷ the register kernels, the
/// same bits, B (k x n) 768 x 768, 1024 x 1024, 1600 x 1600, 1024 x 2048, 2048 x 512, 512 x
/// 1024 (2-10 MiB): AVX2 one and two rows from memory (`ARGUS_AB_COPIES=48`) 1.05-1.57x faster,
/// from L3 (one B over and over) 0.86-1.82x (1.28-1.82 at 4 KiB-multiple strides); GPT-2 XL's
/// layer (`bench_models`, 10 MiB weights) at n 2 1.35-1.5x on 1 thread, level on 2 (each
/// thread's half of W's columns: 5 MiB). AVX-512 two rows 0.97-1.22x from memory, 1.07-1.40x
/// from L3, and the layer at n 2 1.07x on 1 thread but 0.86-0.99x on 2 (its two-row kernel
/// reads 768 bytes of a row a step); one row 1.02-1.05x from memory, 0.88-1.00x from L3. On a
/// core of less than 48 KiB of L1d (`roomy_l1` false) AVX-512 takes b_past_l2_bytes too
/// (far_reads_follow_l1d).
constexpr std::size_t row_sweep_least_bytes(bool roomy_l1) noexcept {
  return far_reads_follow_l1d && roomy_l1 ? b_from_memory_bytes : b_past_l2_bytes;
}

/// Whether gemm takes m rows of A against a row-major B (k x n) by gemm_row_sweep: up to
/// row_sweep_most rows (the figures below are for one), where B is row_sweep_least_bytes
/// or more, so read from memory in a model, with AVX2 or AVX-512. AMD EPYC Zen 5
/// (family 26 model 2), one thread, `bench/ab/ab.sh [--march=x86-64-v3]` against the one-row
/// register kernel (the same bits): AVX-512 (whose kernel took 1.3-1.5x oneDNN's time on its
/// reordered weights, reading 1 KiB of a row a step) W 4096 x 4096, 4000 x 4000, 2048 x 8192
/// 1.20-1.28x faster, into heads of 128 1.28x, 2560 x 2560 1.12x, 2048 x 2048 (16 MiB, in L3
/// there) 1.00x, but from memory (rotating three copies of W) 4096 x 4096 1.03x, n 1024 and
/// k 4096 1.38x; AVX2, against its kernel fetching a call ahead, 1.21-1.37x. The portable set
/// keeps that kernel: 1.21x against 4096 x 4096 but 0.99-1.02x, with quartiles 0.88-1.36,
/// elsewhere (docs/performance.md, "One row against a large W, row by row").
template <class T>
constexpr bool sweeps_b_rows(std::size_t m, std::size_t k, std::size_t n, bool roomy_l1) noexcept {
  return row_sweep_set && m >= 1 && m <= row_sweep_most &&
         b_bytes<T>(k, n) >= row_sweep_least_bytes(roomy_l1);
}

/// C (M x n) = alpha A B + (bias, if bias) + (C, if accumulate) for M rows of A (element
/// (i, p) at a[i * a_row + p * a_step]) against a row-major B (row stride ldb), read row by
/// row: for each k block (balanced_block(k, kc), as gemm cuts k) and each pass of up to
/// row_sweep_columns / M columns, the partial sums of each row of A start at 0 in `partial`
/// and take row_sweep_rows of B's rows at a time, each row a contiguous run (which the
/// hardware's prefetchers follow, where the register kernels read a run of each row a step
/// and jump a row); then C's columns take them as store_tile takes a register tile's. Element
/// (i, j) of C at c[(j / c_block) * c_block_stride + i * ldc + j % c_block]. Each element gets
/// the register kernels' operations in their order, so the same bits.
/// partial: row_sweep_columns<T> + M vectors of T, aligned.
template <class T, std::size_t M>
void gemm_row_sweep(std::size_t n, std::size_t k, T alpha, const T* a, std::size_t a_row,
                    std::size_t a_step, const T* b, std::size_t ldb, T* c, std::size_t ldc,
                    std::size_t c_block, std::size_t c_block_stride, const T* bias, bool accumulate,
                    T* __restrict partial) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, group = row_sweep_rows;
  // Columns of a pass, and the distance between the rows' partial sums (whole vectors).
  constexpr std::size_t pass = row_sweep_columns<T> / M / w * w, sums = pass + w;
  const std::size_t kc_block = balanced_block(k, gemm_tile<T>::kc);
  const V va = V::broadcast(alpha);
  for (std::size_t j0 = 0; j0 < n; j0 += pass) {
    const std::size_t cols = std::min(pass, n - j0);
    const std::size_t whole = cols / w * w, tail = cols - whole;
    for (std::size_t pc = 0; pc < k; pc += kc_block) {
      const std::size_t kc = std::min(kc_block, k - pc);
      for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < cols; j += w) V::zero().store(partial + i * sums + j);
      // rows [p, p + R) of the k block into the partial sums, in the order of p.
      const auto rows = [&]<std::size_t R>(std::integral_constant<std::size_t, R>, std::size_t p)
          __attribute__((always_inline)) {
        V ar[M][R];
        const T* row[R];
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t i = 0; i < M; ++i)
            ar[i][r] = V::broadcast(a[i * a_row + (pc + p + r) * a_step]);
          row[r] = b + (pc + p + r) * ldb + j0;
        }
        const auto step = [&](std::size_t j, auto load) __attribute__((always_inline)) {
          V acc[M];
          for (std::size_t i = 0; i < M; ++i) acc[i] = V::load(partial + i * sums + j);
#pragma GCC unroll 8
          for (std::size_t r = 0; r < R; ++r) {
            const V bv = load(row[r] + j);
            for (std::size_t i = 0; i < M; ++i) acc[i] = fma(ar[i][r], bv, acc[i]);
          }
          for (std::size_t i = 0; i < M; ++i) acc[i].store(partial + i * sums + j);
        };
        for (std::size_t j = 0; j < whole; j += w) step(j, [](const T* x) { return V::load(x); });
        if (tail) step(whole, [&](const T* x) { return V::load_partial(x, tail); });
      };
      std::size_t p = 0;
      for (; p + group <= kc; p += group) rows(std::integral_constant<std::size_t, group>{}, p);
      for (; p < kc; ++p) rows(std::integral_constant<std::size_t, 1>{}, p);
      // C's columns take the sums as store_tile takes a tile's: alpha · sum + (bias's
      // vector, first block only) + (C, if loaded), vector by vector; a vector across two of
      // C's blocks, or past n, gathered and scattered by runs.
      const bool load_c = pc > 0 || accumulate;
      const T* block_bias = pc == 0 ? bias : nullptr;
      for (std::size_t j = 0; j < cols; j += w) {
        const std::size_t col = j0 + j, len = std::min(w, cols - j);
        const V vb = block_bias ? V::load_partial(block_bias + col, len) : V::zero();
        T* to[1];
        if (len == w && vector_destinations(c, col, 1, c_block, c_block_stride, to)) {
          for (std::size_t i = 0; i < M; ++i) {
            V add = vb;
            if (load_c) add += V::load(to[0] + i * ldc);
            fma(V::load(partial + i * sums + j), va, add).store(to[0] + i * ldc);
          }
          continue;
        }
        const auto for_runs = [&](std::size_t i, auto&& f) {
          for_block_runs(c + i * ldc, col, len, c_block, c_block_stride, f);
        };
        for (std::size_t i = 0; i < M; ++i) {
          alignas(buffer_alignment) T lanes[w] = {};
          V add = vb;
          if (load_c) {
            for_runs(i, [&](std::size_t u, std::size_t run, const T* from) {
              std::memcpy(lanes + u, from, run * sizeof(T));
            });
            add += V::load(lanes);
          }
          fma(V::load(partial + i * sums + j), va, add).store(lanes);
          for_runs(i, [&](std::size_t u, std::size_t run, T* into) {
            std::memcpy(into, lanes + u, run * sizeof(T));
          });
        }
      }
    }
  }
}

/// The loop nest of gemm_nn (TransposedB false), gemm_nt (TransposedB true) and, with
/// TransposedA, C = alpha Aᵀ B where `a` is Aᵀ, (k x m) row-major with row stride lda.
/// C's columns come in blocks of c_block (any width >= 1; n + 1 for one block), block b
/// starting c_block_stride elements after block b − 1: element (i, j) of C is at
/// c[(j / c_block) * c_block_stride + i * ldc + j % c_block] (gemm_nn_split). A tile across
/// two blocks is stored vector by vector where each vector lies inside one block, and goes
/// through gemm_gathered_tile where one straddles them.
/// `panels`, when not null, is a matrix of k rows and `panels_n` columns packed by
/// pack_b_blocked (TransposedB false), of which B is the columns from `panels_col0` on: its
/// panels are read where they lie and `b` is not read. Without panels, a row-major B
/// (TransposedB false) multiplied by a few slivers of A is read in place (reads_b_in_place).
template <bool TransposedB, class T, bool TransposedA = false>
void gemm(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
          const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias, bool accumulate,
          std::size_t c_block, std::size_t c_block_stride, const T* panels = nullptr,
          std::size_t panels_n = 0, std::size_t panels_col0 = 0) {
  using tile = gemm_tile<T>;
  constexpr sliver_layout a_layout = TransposedA ? sliver_layout::steps : sliver_layout::rows;
  if (m == 0 || n == 0) return;
  if (k == 0) return gemm_empty_k(m, n, c, ldc, bias, accumulate);

  auto& buffers = gemm_buffers<T>::local();
  // Where data read once is fetched (into L1 or into L2 only) follows the core's L1d.
  const bool roomy_l1 = argus::detail::roomy_l1d();
  // One or two rows of A against a large row-major B: B read row by row (gemm_row_sweep).
  if constexpr (reads_b_where_it_lies<T>) {
    if (!TransposedB && panels == nullptr && sweeps_b_rows<T>(m, k, n, roomy_l1)) {
      static_assert(row_sweep_columns<T> + row_sweep_most * simd<T>::width <=
                    gemm_buffers<T>::b_size);
      const std::size_t a_row = TransposedA ? 1 : lda, a_step = TransposedA ? lda : 1;
      const auto sweep = [&]<std::size_t M>(std::integral_constant<std::size_t, M>) {
        gemm_row_sweep<T, M>(n, k, alpha, a, a_row, a_step, b, ldb, c, ldc, c_block, c_block_stride,
                             bias, accumulate, buffers.b);
      };
      static_assert(row_sweep_most == 2, "one call per height below");
      if (m == 1) return sweep(std::integral_constant<std::size_t, 1>{});
      return sweep(std::integral_constant<std::size_t, 2>{});
    }
  }
  const std::size_t kc_block = balanced_block(k, tile::kc);
  const sliver_cut cut = sliver_cut::of<T>(m);
  const std::size_t slivers = cut.count;
  // Few slivers of rows against a row-major B that is not prepacked: B read where it lies
  // (gemm_direct_b_block).
  const bool in_place = reads_b_where_it_lies<T> && !TransposedB && panels == nullptr &&
                        reads_b_in_place<T>(slivers, ldb, k, n);
  const auto short_kernel = gemm_micro_kernel_for<T, a_layout>(cut.short_rows);
  const auto tall_kernel = gemm_micro_kernel_for<T, a_layout>(cut.tall_rows);
  // On prepacked panels, for more slivers than run panel by panel (gemm_prepacked_block), the
  // first sliver reads each panel from wherever B lies, and fetches the next one as it goes
  // (gemm_micro_kernel's FetchNext); the others find the block in cache.
  const auto first_kernel = panels != nullptr
                                ? gemm_micro_kernel_for<T, a_layout, true>(cut.rows(0))
                                : (cut.tall > 0 ? tall_kernel : short_kernel);
  // The first sliver of several packs a row-major B that is not prepacked (the loop nest
  // below); with one sliver, such a B is read in place.
  const auto packing_kernel = [&]() -> gemm_micro_kernel_packing_ptr<T> {
    if (TransposedB || panels != nullptr || in_place) return nullptr;
    // The packing kernels start at packing_rows_lowest rows, the least a first sliver of
    // several has; a lower one (one sliver that does not read B in place: double's) copies
    // its panels (pack_b_panel_n below).
    if (cut.rows(0) < packing_rows_lowest<T>) return nullptr;
    if constexpr (packing_fetch_skew > 1)
      if (skews_b_fetch<T>(ldb, k, n))
        return gemm_micro_kernel_packing_for<T, a_layout, packing_fetch_skew>(cut.rows(0));
    return gemm_micro_kernel_packing_for<T, a_layout>(cut.rows(0));
  }();
  // How the slivers read B in place (gemm_direct_b_block): the same for every block.
  const few_rows_read rows_read = few_rows_read_for<T>(m, ldb, k, n, roomy_l1);
  const direct_b_fetching fetching{direct_b_fetches_near<T>(0, slivers, k, n),
                                   direct_b_fetches_near<T>(1, slivers, k, n),
                                   skews_b_fetch<T>(ldb, k, n), packs_page_panels<T>(m, ldb)};

  // A product of few slivers, reading a row-major B in place or prepacked panels panel by panel,
  // runs k block by k block over all of C's columns, not column block by column block as the
  // loop nest below, which keeps a packed block of B in L2 for many slivers: few read each panel
  // once. So B is read in the order it lies (prepacked: one stream from first panel to last; a
  // row-major B: kc whole rows at a time), each kernel's fetch of the next panel fetches the one
  // read next, but at a k block's end, rather than at every block of columns' (512 KiB), and C,
  // m rows of n, is read back once per k block from cache (48 rows of 11008 columns: 2 MiB). AMD
  // EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh [--march=x86-64-v3] HEAD WORKTREE
  // gemm|packed M ROUNDS N K`, W 768 x 768 to 11008 x 4096, from memory (ARGUS_AB_COPIES) and
  // from L3, the same bits: in place, m 3-48, AVX-512 1.00-1.18x faster (from memory m 4-24
  // 1.02-1.12x), AVX2 0.97-1.29x (m 3-8 against 2560 x 2560 and larger 1.04-1.23x); prepacked,
  // m 1-48, AVX-512 1.01-1.20x, AVX2 1.01-1.21x; W 512 x 512 (one block of columns: the same
  // calls) 0.97-1.02x from run to run. GPT-2 XL's, Phi-2's and GQA 4096's layers at n 4-16,
  // 1 and 2 threads, 3-8 % faster (AVX2 GPT-2 XL n 4 1.2x; docs/performance.md, "Few slivers
  // run k block by k block").
  if ((panels != nullptr && prepacked_by_panel(slivers)) || in_place) {
    for (std::size_t pc = 0; pc < k; pc += kc_block) {
      const std::size_t kc = std::min(kc_block, k - pc);
      const bool first = pc == 0;
      const T* block_a = a + (TransposedA ? pc * lda : pc);
      const T* block_bias = first ? bias : nullptr;
      const bool load_c = !first || accumulate;
      if (panels != nullptr)
        gemm_prepacked_block<T, a_layout>(
            m, kc, n, block_a, lda, panels + pc * packed_width<T>(panels_n) + panels_col0 * kc, c,
            ldc, c_block, c_block_stride, alpha, block_bias, load_c, buffers);
      else if constexpr (reads_b_where_it_lies<T>)
        gemm_direct_b_block<T, a_layout>(m, kc, n, block_a, lda, b + pc * ldb, ldb, c, ldc, c_block,
                                         c_block_stride, alpha, block_bias, load_c, rows_read,
                                         fetching, buffers);
    }
    return;
  }
  for (std::size_t jc = 0; jc < n; jc += tile::nc) {
    const std::size_t nc = std::min(tile::nc, n - jc);
    for (std::size_t pc = 0; pc < k; pc += kc_block) {
      const std::size_t kc = std::min(kc_block, k - pc);
      // The first k block writes C (adding bias, and C itself if accumulating); the
      // following ones add to it.
      const bool first = pc == 0;
      const bool load_c = !first || accumulate;
      const T* block_bias = first && bias ? bias + jc : nullptr;

      for (std::size_t s = 0, ir = 0; s < slivers; ++s) {
        const std::size_t rows = cut.rows(s);
        const auto kernel = s == 0 ? first_kernel : s < cut.tall ? tall_kernel : short_kernel;
        if constexpr (TransposedA)
          pack_a_sliver_steps(rows, kc, a + pc * lda + ir, lda, buffers.a);
        else
          pack_a_sliver(rows, kc, a + ir * lda + pc, lda, buffers.a);
        T* c_rows = c + ir * ldc;
        // The next sliver's rows of A, fetched a few cache lines per panel while this
        // sliver runs, so that its copy finds them in cache: rows of a long A (x at n 1024,
        // 2 MiB) come from L3 otherwise, and the copy waited on them (2.7 % of the MHA
        // forward's time). On Zen 4 (bench/ab/ab.sh gemm, m 1024 and 4096) gemm_nn ran
        // 1.6-1.9 % faster with AVX-512, 3.8 % with AVX2; m 128, whose A is in cache, the
        // same (0.995). Not for TransposedA, whose slivers are columns of Aᵀ.
        const std::size_t next_ir = ir + rows;
        const std::size_t next_rows = s + 1 < slivers ? cut.rows(s + 1) : 0;
        constexpr std::size_t line = 64 / sizeof(T);
        const std::size_t row_lines = (kc + line - 1) / line;
        const std::size_t lines = next_rows * row_lines;
        const std::size_t panels_in_block = (nc + tile::nr - 1) / tile::nr;
        const std::size_t per_panel = (lines + panels_in_block - 1) / panels_in_block;
        std::size_t fetched = 0;
        for (std::size_t jr = 0; jr < nc; jr += tile::nr) {
          if constexpr (!TransposedA)
            for (std::size_t f = 0; f < per_panel && fetched < lines; ++f, ++fetched) {
              const std::size_t r = fetched / row_lines, l = fetched % row_lines;
              __builtin_prefetch(a + (next_ir + r) * lda + pc + l * line);
            }
          const std::size_t cols = std::min(tile::nr, nc - jr);
          // B(pc:pc+kc, jc+jr:jc+jr+nr) is packed by the first sliver: a whole panel of a
          // row-major B whose tile's vectors each lie in one of C's column blocks by the
          // micro-kernel itself as it reads B's rows where they lie
          // (gemm_micro_kernel_direct_b_packing), any other panel by a copy just before its
          // first use. Prepacked (pack_b_blocked), k block pc starts at
          // pc * packed_width(panels_n) and holds every panel, kc x nr each.
          // A tile whose vectors each lie in one of C's column blocks (contiguous or not) is
          // stored vector by vector where it belongs; any other through gemm_gathered_tile.
          const T* tile_bias = block_bias ? block_bias + jr : nullptr;
          const std::size_t col = jc + jr;
          T* vectors[tile::nv];
          const bool whole = cols == tile::nr && vector_destinations(c_rows, col, tile::nv, c_block,
                                                                     c_block_stride, vectors);
          const T* panel =
              panels ? panels + pc * packed_width<T>(panels_n) + (panels_col0 + jc + jr) * kc
                     : buffers.b + jr * kc;
          if (s == 0 && !panels) {
            T* dst = buffers.b + jr * kc;
            if constexpr (!TransposedB) {
              if (whole && packing_kernel != nullptr) {
                // The rows fetched ahead: the panel packing_ahead_panels on in the order
                // this loop nest packs them, further in this block or among the first of
                // the next (the next k block of these columns; after the last, the next
                // columns from row 0). An address only: past B's last row or column it is
                // a hint that no one reads.
                const std::size_t on = jr + packing_ahead_panels * tile::nr;
                const std::size_t ahead = on < nc       ? pc * ldb + jc + on
                                          : pc + kc < k ? (pc + kc) * ldb + jc + (on - nc)
                                                        : jc + on;
                packing_kernel(kc, buffers.a, b + pc * ldb + col, ldb, vectors, ldc, alpha,
                               tile_bias, load_c, dst,
                               reinterpret_cast<std::uintptr_t>(b) + ahead * sizeof(T));
                continue;
              }
            }
            if constexpr (TransposedB)
              pack_b_panel_t(kc, cols, b + (jc + jr) * ldb + pc, ldb, dst);
            else
              pack_b_panel_n(kc, cols, b + pc * ldb + jc + jr, ldb, dst);
          }
          if (whole)
            kernel(kc, buffers.a, panel, vectors, ldc, alpha, tile_bias, load_c);
          else
            gemm_gathered_tile<T>(kernel, rows, cols, kc, buffers.a, panel, c_rows, ldc, col,
                                  c_block, c_block_stride, alpha, tile_bias, load_c);
        }
        ir += rows;
      }
    }
  }
}

/// Elements of B (k x n) packed by pack_b_panels or pack_b_blocked: ceil(n / nr) panels of
/// k x nr.
template <class T>
constexpr std::size_t packed_b_elements(std::size_t k, std::size_t n) noexcept {
  return k * packed_width<T>(n);
}

/// B (k x n) into ceil(n / nr) panels of (k x nr), panel q at dst + q * k * nr (columns past
/// n zero), from row-major B (TransposedB false) or row-major Bᵀ (n x k, TransposedB true),
/// row stride ldb: the packing gemm does on every call, done once for an operand that
/// gemm_packed_b then multiplies many times. A panel's k block [pc, pc + kc) starts at
/// pc * nr, so one packing serves every depth.
template <bool TransposedB, class T>
void pack_b_panels(std::size_t k, std::size_t n, const T* b, std::size_t ldb, T* dst) noexcept {
  using tile = gemm_tile<T>;
  for (std::size_t j = 0; j < n; j += tile::nr, dst += k * tile::nr) {
    const std::size_t cols = std::min(tile::nr, n - j);
    if constexpr (TransposedB)
      pack_b_panel_t(k, cols, b + j * ldb, ldb, dst);
    else
      pack_b_panel_n(k, cols, b + j, ldb, dst);
  }
}

/// Zeroes step r of a (k x n) matrix packed by pack_b_panels(k, n, ...): B's row r.
template <class T>
void zero_packed_b_row(std::size_t k, std::size_t n, std::size_t r, T* panels) noexcept {
  using tile = gemm_tile<T>;
  for (std::size_t j = 0; j < n; j += tile::nr)
    std::fill_n(panels + j * k + r * tile::nr, tile::nr, T(0));
}

/// C (m x n) = alpha A B (+ C if accumulate) for row-major A (row stride lda) and B the
/// first k rows of a (depth x n') matrix packed by pack_b_panels(depth, n', ...) at `panels`
/// (k <= depth, n <= n'; a product over fewer rows or columns than were packed reads those). The
/// slivers of A are packed as gemm packs them, except that a row-major A whose row stride is
/// gemm_tile<T>::kc already has the packed sliver layout when k <= kc and is read in place. For
/// products whose B is reused (the keys of one tile against every query tile of the backward pass)
/// and whose A was just written by the caller in that layout.
template <class T>
void gemm_packed_b(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
                   std::size_t lda, const T* panels, std::size_t depth, T* c, std::size_t ldc,
                   bool accumulate) {
  using tile = gemm_tile<T>;
  assert(k <= depth);
  if (m == 0 || n == 0) return;
  if (k == 0) return gemm_empty_k<T>(m, n, c, ldc, nullptr, accumulate);
  const bool in_place = k <= tile::kc && lda == tile::kc;
  T* const buffer = in_place ? nullptr : gemm_buffers<T>::local().a;
  const std::size_t kc_block = balanced_block(k, tile::kc);
  const sliver_cut cut = sliver_cut::of<T>(m);  // slivers of nearly equal height, as in gemm
  const auto short_kernel = gemm_micro_kernel_for<T>(cut.short_rows);
  const auto tall_kernel = gemm_micro_kernel_for<T>(cut.tall_rows);
  for (std::size_t s = 0, ir = 0; s < cut.count; ++s) {
    const std::size_t rows = cut.rows(s);
    const auto kernel = s < cut.tall ? tall_kernel : short_kernel;
    for (std::size_t pc = 0; pc < k; pc += kc_block) {
      const std::size_t kc = std::min(kc_block, k - pc);
      const T* sliver = a + ir * lda;
      if (!in_place) {
        pack_a_sliver(rows, kc, sliver + pc, lda, buffer);
        sliver = buffer;
      }
      const bool load_c = pc > 0 || accumulate;
      for (std::size_t jr = 0; jr < n; jr += tile::nr) {
        const std::size_t cols = std::min(tile::nr, n - jr);
        const T* panel = panels + jr * depth + pc * tile::nr;
        T* c_tile = c + ir * ldc + jr;
        if (cols == tile::nr)
          kernel(kc, sliver, panel, contiguous_vectors<T>(c_tile).at, ldc, alpha, nullptr, load_c);
        else
          gemm_narrow_tile<T>(kernel, rows, cols, kc, sliver, panel, c_tile, ldc, alpha, nullptr,
                              load_c);
      }
    }
    ir += rows;
  }
}

}  // namespace detail

/// C(m x n) = alpha * A(m x k) * B(k x n) [+ bias broadcast over rows] [+ C if accumulate].
///
/// Row-major with leading dimensions lda, ldb, ldc (elements between rows; columns are
/// contiguous). bias is nullptr or n entries. When accumulate is false C is only written,
/// never read. Pointers need no particular alignment; C must not overlap A, B or bias.
/// k == 0 gives C = bias (+ C). The first call on a thread allocates its packing buffers
/// (about 0.5 MiB); later calls allocate nothing.
template <class T>
void gemm_nn(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
             const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias = nullptr,
             bool accumulate = false) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::gemm_nn<T> is defined for float and double");
  detail::gemm<false>(m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate, n + 1, 0);
}

/// As gemm_nn, with C's n columns split into blocks of `block` columns, each its own
/// row-major (m x block) matrix with row stride ldc, block b at c + b * block_stride:
/// element (i, j) of C is c[(j / block) * block_stride + i * ldc + j % block]. This is
/// x·W written straight into split heads: with block = d_k, ldc = d_k and block_stride =
/// seq · d_k, the (seq x heads·d_k) product lands as (heads, seq, d_k). One product over all
/// the columns packs each row of A a few times, not once per block, and pads only its last
/// panel, whatever the block width: a tile across two blocks is computed whole and stored
/// in both (with d_k 80 and 32-column panels, one product per head would pad each
/// head's third panel, a sixth of its multiply-adds). pre: block >= 1; no two elements of C
/// overlap.
template <class T>
void gemm_nn_split(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
                   std::size_t lda, const T* b, std::size_t ldb, T* c, std::size_t ldc,
                   std::size_t block, std::size_t block_stride, const T* bias = nullptr,
                   bool accumulate = false) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::gemm_nn_split<T> is defined for float and double");
  assert(block >= 1);
  detail::gemm<false>(m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate,
                      block >= n ? n + 1 : block, block_stride);
}

/// As gemm_nn, with B given transposed: B is (n x k) row-major and C = alpha * A * B^T.
/// This is the Q * K^T of attention scores.
template <class T>
void gemm_nt(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
             const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias = nullptr,
             bool accumulate = false) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::gemm_nt<T> is defined for float and double");
  detail::gemm<true>(m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate, n + 1, 0);
}

/// As gemm_nn, with A given transposed: `a` is Aᵀ, (k x m) row-major with row stride lda, and
/// C = alpha * Aᵀ * B. This is the weight gradient xᵀ·dY of a projection (x is (rows x d),
/// so the gradient's rows [c0, c0 + m) read x + c0 with lda = d), with no transposed copy of
/// x: the slivers of Aᵀ are packed k step by k step, m columns of a row of x at a time.
template <class T>
void gemm_tn(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
             const T* b, std::size_t ldb, T* c, std::size_t ldc, const T* bias = nullptr,
             bool accumulate = false) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::gemm_tn<T> is defined for float and double");
  detail::gemm<false, T, true>(m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate, n + 1, 0);
}

/// The width of the panels that gemm packs B into on this instruction set: panels packed by
/// pack_gemm_b are read in place by gemm_nn_split_prepacked only where they have this width.
/// (Their layout also depends on the k block, gemm_tile<T>::kc: 256 where a panel is two
/// 64-byte registers wide, 512 where it is two of 32 or 16 bytes. For one T every set has its
/// own width, so the width tells the k block too; the static_assert keeps kc a function of
/// the width, or makes whoever changes that tag the layout with the k block as well.)
template <class T>
std::size_t gemm_panel_width() {
  static_assert(
      detail::gemm_tile<T>::kc == (detail::gemm_tile<T>::nr * sizeof(T) == 128 ? 256 : 512),
      "packed weights (pack_gemm_b) are laid out by the k block, which the panel width "
      "must tell: a set with another kc for its width must give gemm_panel_width a tag "
      "that tells them apart");
  return detail::gemm_tile<T>::nr;
}

/// The elements pack_gemm_b writes for a (k x n) B: k x n rounded up to whole panels.
template <class T>
std::size_t gemm_packed_b_size(std::size_t k, std::size_t n) {
  return detail::packed_b_elements<T>(k, n);
}

/// B (k x n, row-major, row stride ldb) packed once, into dst (gemm_packed_b_size(k, n)
/// elements), in the panels that gemm_nn and gemm_nn_split pack it into on every call: for a
/// weight that many products read (argus::packed_weight).
template <class T>
void pack_gemm_b(std::size_t k, std::size_t n, const T* b, std::size_t ldb, T* dst) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::pack_gemm_b<T> is defined for float and double");
  detail::pack_b_blocked(k, n, b, ldb, dst);
}

/// gemm_nn_split with B also given packed: B is columns [col0, col0 + n) of the (k x panels_n)
/// matrix that pack_gemm_b packed at `panels`, `panel_width` wide (gemm_panel_width of the set
/// that packed it). The panels are read in place when they serve this set's loop nest:
/// panel_width is gemm_panel_width() and col0 a multiple of it (any block width); otherwise
/// B is read from `b` as gemm_nn_split reads it. The result is the same to the bit either way: the
/// same products in the same order, without the copy of B into panels on every call. pre: col0 + n
/// <= panels_n.
template <class T>
void gemm_nn_split_prepacked(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
                             std::size_t lda, const T* b, std::size_t ldb, const T* panels,
                             std::size_t panel_width, std::size_t panels_n, std::size_t col0, T* c,
                             std::size_t ldc, std::size_t block, std::size_t block_stride,
                             const T* bias, bool accumulate) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::gemm_nn_split_prepacked<T> is defined for float and double");
  constexpr std::size_t nr = detail::gemm_tile<T>::nr;
  assert(block >= 1 && col0 + n <= panels_n);
  if (panels == nullptr || panel_width != nr || col0 % nr != 0)
    return gemm_nn_split<T>(m, n, k, alpha, a, lda, b, ldb, c, ldc, block, block_stride, bias,
                            accumulate);
  detail::gemm<false>(m, n, k, alpha, a, lda, b, ldb, c, ldc, bias, accumulate,
                      block >= n ? n + 1 : block, block_stride, panels, panels_n, col0);
}

// This header's entry points, declared for the program's use of the kernels
// (kernel/entry_points.hpp).
ARGUS_KERNEL_DECLARE_ENTRY_POINTS(ARGUS_KERNEL_GEMM_ENTRY_POINTS)
#if defined(ARGUS_EXTERN_KERNELS) && !defined(ARGUS_DISPATCH_KERNELS)
ARGUS_KERNEL_GEMM_INLINED_CALLEES(extern template, float)
ARGUS_KERNEL_GEMM_INLINED_CALLEES(extern template, double)
#endif

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
