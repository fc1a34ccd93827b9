// argus/kernel/gemm_microkernel.hpp -- kernel layer: the register tile of gemm.hpp.
//
// Defines gemm_tile<T> (the micro-tile and cache-block sizes, all derived from
// simd<T>::width and the register count of the target) and gemm_micro_kernel, which
// multiplies one packed A sliver by one packed B panel into a tile of C held entirely in
// registers. Private to gemm.hpp.
#pragma once

#include "argus/kernel/simd.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {
namespace detail {

/// Tile and block sizes of gemm for element type T.
///
/// The micro-tile is mr rows x nr = nv * width columns of C, kept in mr * nv vector
/// accumulators. Each k step loads nv vectors of B and broadcasts mr scalars of A, so one
/// step costs nv loads + mr broadcasts for mr * nv FMAs. Accumulators, the nv B vectors and
/// a broadcast must fit the register file with room to spare:
///   AVX-512 (32 registers): 12 x 2 -- 24 + 2 + 1. Measured on one Xeon core (AVX-512, two
///     FMA pipes, fp32 peak 175 GFLOP/s), (1024 x 512) . (512 x 512): 12 x 2 161 GFLOP/s,
///     8 x 2 161, 6 x 4 160, 4 x 4 158-165, 8 x 3 149. 14 x 2 (28 + 2 + 1) reached 157
///     in one build and 113 in another, where GCC spilled a B vector to the stack inside
///     the k loop: one register short of the 12 x 2 margin is too fragile to keep.
///   AVX2 and the portable 16-byte target (16 registers): 6 x 2 -- 12 + 2 + 1.
///
/// Blocking (one thread): an A sliver (mr x kc, 12 KiB for float) stays in L1 and is reused
/// by every panel of the B block (kc x nc = 512 KiB, about half an L2), which streams from
/// L2. AVX-512: kc = 256 measured best among 128, 192, 256, 384, 512 (by 2-6 %); a B block of
/// 512 KiB beat 256 KiB (which packs A twice for n = 512) and tied with 1 MiB; kc = 512 was
/// 2-3 % slower again on an Intel Xeon (family 6 model 167). 16 registers: kc = 512, so that
/// a product of depth 512 (the projections of d_model 512) updates C once rather than twice:
/// on that Xeon's AVX2 kernels (m x 512) . (512 x 512) ran 4.5 % (m 1024) and 12.4 % (m 4096)
/// faster than with 256, the MHA's kernels 2.2-2.4 % at n 1024 (docs/performance.md).
/// Not measured on an AMD machine (whose L2 may be 512 KiB: the B block stays 512 KiB).
template <class T>
struct gemm_tile {
  static constexpr std::size_t width = simd<T>::width;
  static constexpr std::size_t registers = simd_bytes == 64 ? 32 : 16;
  static constexpr std::size_t nv = 2;
  static constexpr std::size_t mr = registers == 32 ? 12 : 6;
  static constexpr std::size_t nr = nv * width;
  /// Depth of one k block, and the row stride of a packed A sliver.
  static constexpr std::size_t kc = registers == 32 ? 256 : 512;
  /// Columns of one packed B block, a multiple of nr: kc * nc * sizeof(T) = 512 KiB.
  static constexpr std::size_t nc = ((std::size_t{512} * 1024 / sizeof(T) / kc) / nr) * nr;
  static_assert(mr * nv + nv + 1 <= registers, "the micro-tile must fit the register file");
};

template <class F, std::size_t... I>
[[gnu::always_inline]] inline void unroll(F&& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}), ...);
}
/// f(integral_constant<0>), ..., f(integral_constant<N-1>), expanded at compile time so that
/// the accumulator array is indexed by constants and lives in registers.
template <std::size_t N, class F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  unroll(std::forward<F>(f), std::make_index_sequence<N>{});
}

/// How a packed A sliver is laid out: row by row with the fixed stride gemm_tile<T>::kc (a
/// copy of rows of a row-major A), or k step by k step with stride Rows (a copy of rows of
/// a row-major Aᵀ, for C = Aᵀ B: each k step's Rows values are contiguous in both), or k
/// step by k step with the stride kc (columns of a row-major Aᵀ whose row stride is kc,
/// read in place: the backward pass's P and dS tiles, flash_attention_backward.hpp).
enum class sliver_layout { rows, steps, strided_steps };

/// Steps of k ahead that gemm_micro_kernel_direct_b fetches B's rows (Intel Xeon, family 6
/// model 207: 8 at least as fast as 4, 16 and 32, with AVX-512 and with AVX2;
/// docs/performance.md, "One sliver reads W in place").
inline constexpr std::size_t direct_b_ahead = 8;

/// Steps of k ahead that gemm_micro_kernel_direct_b_rows<..., LongAhead> fetches each row of B
/// into L1, for NV vectors of a row a step: about direct_b_long_ahead_bytes of each row's run
/// (8 steps of AVX-512's 2-row kernel, 12 of 3 rows, 16 of 4, 24 of 5-6), from direct_b_ahead
/// to 24 steps. gemm.hpp's few_rows_read_for says where (rows_long).
inline constexpr std::size_t direct_b_long_ahead_bytes = 6144;
template <class T, std::size_t NV>
inline constexpr std::size_t direct_b_long_ahead =
    std::clamp<std::size_t>(direct_b_long_ahead_bytes / (NV * simd_bytes), direct_b_ahead, 24);

/// Whether this set's rows kernels fetch each row direct_b_long_ahead steps ahead against a B of
/// gemm.hpp's b_past_l2_bytes or more that they do not fetch a call ahead, where B's rows are not a
/// multiple of 2 KiB apart (such rows fall on two offsets of L1's sets, which the longer fetch
/// overruns: 2048 x 512 from L3 0.66-0.88x): AVX-512, whose 3-6 rows read a B from memory with
/// 8 steps' 256-512 bytes of each row in flight, too few to cover memory's latency. AMD EPYC
/// Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh`, the same bits, B (k x n) 768 x 768,
/// 1280 x 1280, 1600 x 1600: from memory (`ARGUS_AB_COPIES=48`) m 3 / 4 / 5-6 1.03-1.06 /
/// 1.08-1.11 / 1.16-1.29x faster, from L3 0.92-1.04x; GPT-2 XL's layer at n 4 1.24 -> 1.09 ms
/// (1 thread), 0.68 -> 0.58 ms (2). Not AVX2 (its kernels from 24 steps: 0.62-1.27x, mostly
/// lower), nor below 2 MiB (AVX-512 m 3-4 against 512 x 512 in cache 0.69-0.87x), nor the
/// register tile's slivers (m 12-24 0.87-1.06x, the MHA forward's kernels at n 4 and 8 0.64 and
/// 0.84x).
inline constexpr bool rows_long_ahead_set = simd_bytes == 64;

/// Panels ahead of the one being packed whose rows the packing micro-kernel
/// (gemm_micro_kernel_direct_b_packing) fetches into L2 at each k step: a row-major B that
/// is not in cache arrives about two panels' time after it is asked for. AMD EPYC Zen 5
/// (family 26 model 2), one thread, bench/ab's interleaved timing against one panel ahead,
/// (m x k) . (k x n) with m 128 and k 1600, n 3200 and 4800: 1.08-1.09x with AVX-512,
/// 1.11-1.15x with AVX2 (the same elsewhere, 1.00-1.04x); four panels ahead: 0.98-1.00x.
/// Those runs had B 16 bytes past a cache line (bench/ab before 13d94c2); on aligned operands
/// one panel ahead took 0.975-1.025x the time of two (m 16-1024, k 512-4096, both ISAs):
/// two kept.
inline constexpr std::size_t packing_ahead_panels = 2;

/// Panels over which the register tile's kernels that fetch the next panel's rows only into L2
/// (gemm.hpp's direct_b_fetches_near false) spread that fetch where B's rows are a multiple of 512
/// bytes apart (gemm.hpp's skews_b_fetch): step p fetches its row of the panel 1 + p mod
/// direct_b_fetch_skew on instead of the next, so that the lines asked for together lie at
/// several offsets of a 512-byte run instead of at one. Rows a multiple of 512 bytes apart put
/// every row's line of a one-line panel at the same offset, and such a W read from memory took
/// twice as long as the same W a line wider (docs/performance.md, "Rows a multiple of 4 KiB
/// apart"). AVX2 (one-line panels): 4. AMD EPYC Zen 5 (family 26 model 2), one thread,
/// `bench/ab/ab.sh --march=x86-64-v3` from memory, the same bits, one sliver of 5-6 rows against
/// rows 3-16 KiB apart (768 to 4096 wide) 1.29-1.79x faster, m 7-12 (a later sliver, or the
/// packing kernel: packing_fetch_skew) 1.05-1.25x; from L3 (one W over and over) 0.86-1.33x. Not
/// where rows are 256 bytes off such a multiple (1600 wide: later slivers 0.77-0.86x) or an odd
/// number of lines apart (4160 bytes: one sliver 0.74x); two or eight panels 1.28x where four
/// gave 1.55x; AVX-512's two-line panels (two or four: 0.47-1.09x) and the rows kernels (AVX2 m 3-4
/// 0.79-0.89x) keep the next panel.
inline constexpr std::size_t direct_b_fetch_skew = simd_bytes == 32 ? 4 : 1;

/// The same for the packing kernel's fetch of the panel packing_ahead_panels on
/// (gemm_micro_kernel_direct_b_packing), at the same strides: 2 with AVX2. The machine and tool
/// as above, several slivers (m 8-48) against rows 3-16 KiB apart 1.05-1.23x faster from memory,
/// m 128-512 1.00-1.04x; four panels 0.93-1.08x (a scratch driver); AVX-512 (m 48-96) 1.00-1.01x:
/// 1 there.
inline constexpr std::size_t packing_fetch_skew = simd_bytes == 32 ? 2 : 1;

/// Fetches the cache lines of [at, at + bytes) for reading, with __builtin_prefetch's
/// Locality (3: into L1, 2: into L2). `at` is an integer: the address of a hint, never
/// dereferenced, which may lie past the end of the object it follows. `at` need not start a
/// line: the line of the range's last byte is fetched as well, one more than bytes / 64 when
/// the range straddles it (a row of a B that is a view of memory argus did not allocate, or
/// whose width is not a multiple of a line). AMD EPYC Zen 5 (family 26 model 2), one thread,
/// `ARGUS_AB_MISALIGN=16 bench/ab/ab.sh`, operands 16 bytes past a line: one sliver of 12
/// rows against W 4096 x 4096 and 2560 x 2560 1.68x and 1.46x faster than fetching bytes / 64
/// lines, m 4-8 1.07-1.09x, the MHA forward's kernels at n 4 and 12 1.07x and 1.15x (AVX2:
/// m 6 against 4096 x 4096 1.71x, elsewhere 1.01-1.16x); on aligned operands, where the last
/// line is fetched twice, 0.98-1.04x (AVX2 0.99-1.08x). Counting the lines at run time
/// instead (a loop from at's line) cost up to 23 % on aligned operands.
template <int Locality>
[[gnu::always_inline]] inline void fetch_lines(std::uintptr_t at, std::size_t bytes) noexcept {
  for (std::size_t l = 0; l < bytes; l += 64) {
    const void* line = reinterpret_cast<const void*>(at + l);  // NOLINT(performance-no-int-to-ptr)
    __builtin_prefetch(line, 0, Locality);
  }
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  const void* last = reinterpret_cast<const void*>(at + bytes - 1);
  __builtin_prefetch(last, 0, Locality);
}

/// acc[i][j] += Σ_p A(i, p) · B(p, j · width ..) over kc steps: the register tile's loop, for
/// an A sliver (element (i, p) at a[i * gemm_tile<T>::kc + p] for Layout rows, a[p * Rows + i]
/// for steps, a[p * gemm_tile<T>::kc + i] for strided_steps) and a packed B panel (element
/// (p, j) at b[p * nr + j]). Each k step loads nv vectors of B and broadcasts Rows scalars of
/// A. The micro-kernel below and the fused epilogues of the backward pass
/// (flash_attention_backward.hpp) run it.
/// With DirectB, b is not a packed panel but NV vectors of a row of a row-major B read where
/// they lie, its k steps ldb elements apart (gemm's products of a few slivers: see gemm.hpp),
/// each row fetched direct_b_ahead steps early into L1; with FetchNext (a count of panels) as
/// well, the same row's next FetchNext x NV vectors (the next panels, which the next tiles read
/// kc steps later and on) into L2 (gemm_micro_kernel_direct_b). With FetchNext and a packed
/// panel, the same step of the panel after it (kc x nr elements on) into L2
/// (gemm_micro_kernel). With PacksB as well, each k step's vectors of B are also stored, as
/// they are loaded, into the packed panel at `pack` (element (p, j) at pack[p * nr + j]), and
/// the same row of another panel of B, whose first row lies at the address `ahead`, is fetched
/// into L2 (the first sliver of gemm's loop nest packs B so: gemm_micro_kernel_direct_b_packing).
/// FetchNear false (DirectB with FetchNext only): no row is fetched into L1, the L2 fetch of
/// the next vectors alone running ahead (gemm_micro_kernel_direct_b_rows from memory). Ahead:
/// the steps ahead of the L1 fetch (direct_b_ahead; direct_b_long_ahead for LongAhead rows).
/// Skew: step p's fetch into L2 (FetchNext 1, or PacksB's) is p mod Skew panels further on
/// (direct_b_fetch_skew, packing_fetch_skew). FetchRows (a packed panel): each k step also
/// fetches into L2 the row of a row-major B (rows ldb apart) whose first row lies at `ahead`,
/// nv vectors of it (the later slivers of gemm_direct_b_block's packed panels: the next panel of
/// B where it lies).
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          bool DirectB = false, std::size_t NV = gemm_tile<T>::nv, std::size_t FetchNext = 0,
          bool PacksB = false, bool FetchNear = true, std::size_t Ahead = direct_b_ahead,
          std::size_t Skew = 1, bool FetchRows = false>
[[gnu::always_inline]] inline void micro_tile_product(std::size_t kc, const T* __restrict a,
                                                      const T* __restrict b,
                                                      simd<T> (&acc)[Rows][NV], std::size_t ldb = 0,
                                                      T* __restrict pack = nullptr,
                                                      std::uintptr_t ahead = 0) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  constexpr std::size_t nv = NV, w = tile::width;
  static_assert(DirectB || NV == tile::nv, "a packed panel is nv vectors wide");
  static_assert(!PacksB || (DirectB && NV == tile::nv), "only a panel read in place is packed");
  static_assert(!FetchNext || !PacksB, "the packing kernel fetches from `ahead`");
  static_assert(!FetchRows || (!DirectB && !FetchNext), "a packed panel fetching B's rows");
  static_assert(FetchNear || (DirectB && FetchNext > 0), "something must be fetched ahead");
  static_assert(Skew >= 1 && (Skew == 1 || FetchNext <= 1), "a skewed fetch asks for one panel");
  const std::size_t nr = DirectB ? ldb : tile::nr;
  // Distance between rows of the sliver, and between k steps.
  constexpr std::size_t lda = Layout == sliver_layout::rows ? tile::kc : 1;
  constexpr std::size_t step = Layout == sliver_layout::rows    ? 1
                               : Layout == sliver_layout::steps ? Rows
                                                                : tile::kc;
  for (std::size_t p = 0; p < kc; ++p) {
    V bv[nv];
    if constexpr (DirectB) {
      // B's rows are ldb apart, one or two cache lines each: fetched direct_b_ahead steps early
      // (the hardware's prefetchers follow the packed panel's sequential reads, not these).
      // (Addresses as integers: the rows past B's last are fetched, never read, and a pointer
      // to them would point outside B. Fetching only rows of this k block instead, one test a
      // step, cost 3-4 % at m 12.) The integer is a hint's address, never dereferenced:
      // nothing for the optimiser's alias analysis to lose.
      const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(b);
      if constexpr (FetchNear) fetch_lines<3>(at + Ahead * ldb * sizeof(T), nv * w * sizeof(T));
      if constexpr (FetchNext > 0)
        fetch_lines<2>(at + (1 + p % Skew) * nv * w * sizeof(T), FetchNext * nv * w * sizeof(T));
    }
    if constexpr (!DirectB && FetchNext > 0)  // an integer address: the last panel's next is past B
      fetch_lines<2>(reinterpret_cast<std::uintptr_t>(b) + kc * tile::nr * sizeof(T),
                     nv * w * sizeof(T));
    if constexpr (FetchRows) {
      fetch_lines<2>(ahead, nv * w * sizeof(T));
      ahead += ldb * sizeof(T);
    }
    unroll<nv>([&](auto j) __attribute__((always_inline)) { bv[j] = V::load(b + j * w); });
    if constexpr (PacksB) {
      unroll<nv>([&](auto j) __attribute__((always_inline)) { bv[j].store(pack + j * w); });
      fetch_lines<2>(ahead + p % Skew * nv * w * sizeof(T), nv * w * sizeof(T));
      pack += tile::nr;
      ahead += ldb * sizeof(T);
    }
    unroll<Rows>([&](auto i) __attribute__((always_inline)) {
      const V ai = V::broadcast(a[i * lda]);
      unroll<nv>([&](auto j)
                     __attribute__((always_inline)) { acc[i][j] = fma(ai, bv[j], acc[i][j]); });
    });
    a += step;
    b += nr;
  }
}

/// The register tile's epilogue: element (i, j · width ..) of C, at(i, j) (a vector of T
/// lying in memory), becomes alpha · acc[i][j] + (bias's vector j, if bias) + (itself, if
/// load_c): the operations every micro-kernel ends with, in one order, so that where a tile's
/// vectors lie changes no bit.
template <class T, std::size_t Rows, std::size_t NV, class At>
[[gnu::always_inline]] inline void store_tile(const simd<T> (&acc)[Rows][NV], T alpha,
                                              const T* __restrict bias, bool load_c,
                                              At at) noexcept {
  using V = simd<T>;
  const V va = V::broadcast(alpha);
  V vb[NV];
  unroll<NV>([&](auto j) __attribute__((always_inline)) {
    vb[j] = bias ? V::load(bias + j * V::width) : V::zero();
  });
  unroll<Rows>([&](auto i) __attribute__((always_inline)) {
    unroll<NV>([&](auto j) __attribute__((always_inline)) {
      T* const to = at(i, j);
      V add = vb[j];
      if (load_c) add += V::load(to);
      fma(acc[i][j], va, add).store(to);
    });
  });
}

/// C(Rows x nr) = alpha * A B + (bias broadcast over rows, if bias) + (C, if load_c).
///
/// a: packed sliver, element (i, p) at a[i * gemm_tile<T>::kc + p] (Layout rows) or
/// a[p * Rows + i] (Layout steps) or a[p * gemm_tile<T>::kc + i] (Layout strided_steps),
/// i < Rows, p < kc.
/// b: packed panel, element (p, j) at b[p * nr + j].
/// at(i, j): where vector j of the tile's row i lies (store_tile); all Rows x nr entries are
/// written.
/// bias: nullptr or nr entries for the tile's columns.
/// With DirectB (gemm_micro_kernel_direct_b), b is nr columns of a row-major B, k steps ldb
/// apart, read in place (with FetchNext, each row's next FetchNext panels fetched into L2);
/// with PacksB also packed into `pack` on the way, fetching rows from `ahead`
/// (micro_tile_product).
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          bool DirectB = false, std::size_t FetchNext = 0, bool PacksB = false,
          bool FetchNear = true, std::size_t Skew = 1, bool FetchRows = false, class At>
[[gnu::always_inline]] inline void gemm_micro_kernel_body(std::size_t kc, const T* __restrict a,
                                                          const T* __restrict b, std::size_t ldb,
                                                          At at, T alpha, const T* __restrict bias,
                                                          bool load_c, T* __restrict pack = nullptr,
                                                          std::uintptr_t ahead = 0) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  constexpr std::size_t nv = tile::nv;
  static_assert(Rows >= 1 && Rows <= tile::mr);

  V acc[Rows][nv];
  unroll<Rows>([&](auto i) __attribute__((always_inline)) {
    unroll<nv>([&](auto j) __attribute__((always_inline)) { acc[i][j] = V::zero(); });
  });
  // C is read (if load_c) and written only after the k loop; start fetching it now.
  for (std::size_t i = 0; i < Rows; ++i) __builtin_prefetch(at(i, 0), 1);

  micro_tile_product<T, Rows, Layout, DirectB, nv, FetchNext, PacksB, FetchNear, direct_b_ahead,
                     Skew, FetchRows>(kc, a, b, acc, ldb, pack, ahead);
  store_tile<T>(acc, alpha, bias, load_c, at);
}

/// Where the gemm_tile<T>::nv vectors of a register tile's row 0 lie, one pointer each: the
/// kernels that read B in place take them so, so that a tile whose vectors lie in two of
/// gemm_nn_split's column blocks (heads of 80 columns against panels of 32) is stored
/// where it belongs instead of through gemm_gathered_tile (whose panel is copied first).
template <class T>
using tile_vectors = T* const (&)[gemm_tile<T>::nv];

/// store_tile's `at` for vectors given one pointer each (row 0's vector j at c[j], row i
/// ldc elements below): the kernels that take tile_vectors or a row kernel's destinations.
template <class T, std::size_t N>
[[gnu::always_inline]] inline auto vectors_at(T* const (&c)[N], std::size_t ldc) noexcept {
  return [&c, ldc](std::size_t i, std::size_t j) { return c[j] + i * ldc; };
}

/// The destinations of a tile whose vectors lie one after another from c (row 0), for the
/// kernels that take tile_vectors: contiguous_vectors<T>(c).at.
template <class T>
struct contiguous_vectors {
  T* at[gemm_tile<T>::nv];
  explicit contiguous_vectors(T* c) noexcept {
    for (std::size_t j = 0; j < gemm_tile<T>::nv; ++j) at[j] = c + j * gemm_tile<T>::width;
  }
};

/// The micro-kernel on a packed panel (gemm_micro_kernel_body with DirectB false), C's
/// vectors where `c` puts them (tile_vectors: a tile across two of gemm_nn_split's column
/// blocks, each vector inside one, is stored where it belongs). With
/// FetchNext, the panel that follows this one where it lies (kc x nr elements on: the next
/// panel of a B packed by pack_b_blocked) is fetched into L2 a step at a time: by the first
/// sliver of a product on prepacked panels (gemm), which reads each panel from wherever B lies
/// while the slivers after it read it from cache, and by those slivers too where the product
/// runs panel by panel (gemm_prepacked_block). AMD EPYC Zen 5 (family 26 model 2), one
/// thread, `bench/ab/ab.sh ... packed M ROUNDS N K` against no such fetch (before
/// gemm_prepacked_block): m 9-48 against 4096 x 4096 and 2560 x 2560 (from memory) 1.15-1.73x
/// faster with AVX-512, 1.22-1.92x with AVX2; m 128 and 256 1.00-1.05x; W in L2 (768 x 768)
/// 0.98-1.01x.
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          bool FetchNext = false>
void gemm_micro_kernel(std::size_t kc, const T* __restrict a, const T* __restrict b,
                       tile_vectors<T> c, std::size_t ldc, T alpha, const T* __restrict bias,
                       bool load_c) noexcept {
  gemm_micro_kernel_body<T, Rows, Layout, false, FetchNext>(kc, a, b, 0, vectors_at(c, ldc), alpha,
                                                            bias, load_c);
}

/// gemm_micro_kernel with b nr columns of a row-major B (element (p, j) at b[p * ldb + j]),
/// read in place instead of from a packed panel, and vector j of C's row i at c[j] + i * ldc:
/// the same operations in the same order, so the same result to the bit. Each row of B is
/// fetched direct_b_ahead steps early into L1, and its next nr columns (the panel the next
/// tile reads, kc steps later) into L2 at the same step, so B's rows come from memory in runs
/// of two panels, a whole panel's time ahead of their use, where the hardware's prefetchers
/// follow none of these strided reads. AMD EPYC Zen 5 (family 26 model 2), one thread,
/// `bench/ab/ab.sh` against the same kernels fetching nothing into L2 (one sliver) or only
/// their rows 32 steps ahead (several): m 9-12 against W 2560 x 2560 and 4096 x 4096 (from
/// memory) 1.67-2.06x faster with AVX-512, m 5-6 with AVX2 2.09-2.61x; two slivers (m 16, 24)
/// against 2560 x 2560 1.23-1.48x; W in L1 or L2 (512 x 512, 768 x 768) 1.00-1.16x. In a
/// scratch variant, two panels ahead: the same or up to 5 % slower; the kernels of
/// gemm_micro_kernel_direct_b_rows, whose k step reads several panels of a row, fetching
/// theirs: 0.66-0.93x with W in L2 or L3 (m 3-8 against 1600 x 1600, 3-4 against 768 x 768).
/// FetchPanels: the panels after this one whose rows are fetched so (1; 0 or
/// direct_b_fetch_group for the first of several slivers where that group is more than one
/// panel: gemm_direct_b_block). FetchNear false (with FetchPanels 1): no row fetched into L1,
/// only the next panel's into L2, for the slivers that find B's rows in L2 against a B that
/// comes from memory (gemm.hpp's direct_b_fetches_near). Skew: the next panels' fetch spread
/// over Skew panels (direct_b_fetch_skew, with FetchPanels 1).
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          std::size_t FetchPanels = 1, bool FetchNear = true, std::size_t Skew = 1>
void gemm_micro_kernel_direct_b(std::size_t kc, const T* __restrict a, const T* __restrict b,
                                std::size_t ldb, tile_vectors<T> c, std::size_t ldc, T alpha,
                                const T* __restrict bias, bool load_c) noexcept {
  gemm_micro_kernel_body<T, Rows, Layout, true, FetchPanels, false, FetchNear, Skew>(
      kc, a, b, ldb, vectors_at(c, ldc), alpha, bias, load_c);
}

/// Panels of a row-major B read in place whose rows the first of several slivers fetches
/// together, every direct_b_fetch_group-th panel (gemm_direct_b_block), so that each row of a
/// B in memory is asked for in runs of two cache lines: 2 where a panel is one 64-byte line
/// (AVX2), 1 elsewhere (AVX-512's panels are two lines). AMD EPYC Zen 5 (family 26 model 2),
/// one thread, `bench/ab/ab.sh --march=x86-64-v3` against fetching each next panel as it
/// comes, W 2560 x 7680 (75 MiB, from memory): m 12, 16, 24 1.12-1.27x, 1.10-1.21x, 1.12-1.14x
/// faster over four runs (this VM's memory bandwidth drifts); W 2560 x 2560 (25 MiB, L3 or
/// memory) 0.98-1.09x, in L2 (768 x 768) 0.99x; Phi-2's layer at n 16 (100 MiB of weights)
/// 1.20x on 1 thread. Not kept: AVX-512 fetching two of its panels together (0.94-0.99x: m
/// 16-40 against 2560 x 7680, 2560 x 2560, 768 x 768), the portable set's 32-byte panels four
/// together (0.96x from memory).
template <class T>
inline constexpr std::size_t direct_b_fetch_group = gemm_tile<T>::nr * sizeof(T) == 64 ? 2 : 1;

/// gemm_micro_kernel_direct_b that also packs the panel it reads: each k step's nr elements
/// of B, loaded from B's row, are stored into `pack` (kc x nr, as pack_b_panel_n lays a panel
/// out) for the slivers after this one, and the same row of the panel whose first row lies
/// at `ahead` (an address only, never read) is fetched into L2. The first sliver of gemm's
/// loop nest thereby packs B on its way through the product, instead of copying each panel
/// before it (a copy whose reads from L3 or memory the micro-kernels around it did not hide):
/// the same operations in the same order, so the same result to the bit. C's vectors lie as
/// gemm_micro_kernel_direct_b's.
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          std::size_t Skew = 1>
void gemm_micro_kernel_direct_b_packing(std::size_t kc, const T* __restrict a,
                                        const T* __restrict b, std::size_t ldb, tile_vectors<T> c,
                                        std::size_t ldc, T alpha, const T* __restrict bias,
                                        bool load_c, T* __restrict pack,
                                        std::uintptr_t ahead) noexcept {
  gemm_micro_kernel_body<T, Rows, Layout, true, 0, true, true, Skew>(
      kc, a, b, ldb, vectors_at(c, ldc), alpha, bias, load_c, pack, ahead);
}

/// Vectors of B's row that gemm_micro_kernel_direct_b_rows covers for a sliver of Rows rows:
/// for one row 16 with AVX-512's 32 registers (1 KiB of floats), 8 with 16 registers (256
/// bytes with AVX2, 128 with 16-byte ones); for several, as many as 24 accumulators (12 with
/// 16 registers) allow, Rows x vectors. Each k step reads that much of one row of B, so a B in
/// memory is read in runs of that length. AMD EPYC Zen 5 (family 26 model 2), one thread,
/// (1 x k) . (k x n), 16 against 4 vectors (256 bytes; `bench/ab/ab.sh 0bee76a 8501de6 gemm 1
/// ROUNDS N K`, the same result to the bit): W 4096 x 4096 (64 MiB, from memory) 1.95x
/// faster, 2560 x 2560 1.96x, 2560 x 7680 1.58x, 512 x 512 1.45x, 768 x 768 1.22x; the MHA
/// forward's kernels at one token (d_model 512) 1.48x. With AVX2, 12 vectors instead of 8
/// took 1.2-1.4x as long (the accumulators and loads outgrow 16 registers). Several rows
/// against the register tile's gemm_tile<T>::nv vectors: docs/performance.md, "A few rows of A
/// read W's rows in longer runs" (m 2-8 with AVX-512 1.3-1.6x faster against W in memory).
template <class T, std::size_t Rows>
inline constexpr std::size_t direct_b_row_vectors = Rows == 1 ? (simd_bytes == 64 ? 16 : 8)
                                                              : (simd_bytes == 64 ? 24 : 12) / Rows;
/// The most rows of one sliver that gemm_micro_kernel_direct_b_rows takes: those for which it
/// reads more of B's row a step than the register tile (8 with 32 registers, 4 with 16).
template <class T>
inline constexpr std::size_t direct_b_rows_most = (simd_bytes == 64 ? 24 : 12) /
                                                  (gemm_tile<T>::nv + 1);
static_assert(direct_b_row_vectors<float, direct_b_rows_most<float>> > gemm_tile<float>::nv &&
              direct_b_row_vectors<float, direct_b_rows_most<float> + 1> <= gemm_tile<float>::nv);
/// The most rows of one sliver that gemm_micro_kernel_direct_b_rows takes against a B of
/// gemm.hpp's b_past_l2_bytes or more whose rows it does not fetch a call ahead
/// (few_rows_read_for): more rows, up to direct_b_rows_most, take the register tile
/// (gemm_micro_kernel_direct_b: two vectors of a row a step, the next panel's rows fetched into
/// L2). AVX-512: 6, so that 7 and 8 rows, whose kernels read 3 vectors (192 bytes) of a row a
/// step, take the register tile. AMD EPYC Zen 5 (family 26 model 2), one thread,
/// `bench/ab/ab.sh`, the register tile ÷ 3 vectors a step, the same bits, B (k x n) 768 x 768,
/// 1024 x 1024, 1600 x 1600, 1024 x 2048, 2048 x 512, 512 x 1024 (2-10 MiB): from memory
/// (`ARGUS_AB_COPIES=48`, as a model's weights come) 1.21-1.50x faster; one B multiplied over
/// and over (from L3) 0.88-1.22x (0.88 and 0.98 at m 7 and 8 against 2048 x 512). Below 2 MiB
/// the rows kernels stay: against 512 x 512 (d_model 512's projections) the register tile took
/// 0.93-1.05x in cache and the MHA forward's kernels at n 7 and 8 0.93-0.96x. 3-6 rows keep
/// their kernels (the register tile 0.58-0.92x in cache, 0.67-1.02x from memory); at 4 KiB-
/// multiple strides 3-8 rows fetch a call ahead from 2 MiB instead (rows_fetch_a_call_ahead,
/// b_call_ahead_page_bytes: 7-8 rows 1.24-1.31x faster than the register tile there). 16-register
/// sets: direct_b_rows_most (AVX2's 4 rows against the register tile: 0.83-1.14x in cache,
/// 1.25-1.59x from memory; they fetch a call ahead from 2 MiB instead: rows_fetch_a_call_ahead).
template <class T>
inline constexpr std::size_t direct_b_rows_near_most =
    simd_bytes == 64 ? std::size_t{6} : direct_b_rows_most<T>;
static_assert(direct_b_rows_near_most<float> <= direct_b_rows_most<float> &&
              direct_b_rows_near_most<double> <= direct_b_rows_most<double>);
static_assert(direct_b_row_vectors<float, 2> <= direct_b_row_vectors<float, 1> &&
                  direct_b_row_vectors<double, 2> <= direct_b_row_vectors<double, 1>,
              "one row covers the most vectors: its array of destinations holds every sliver's");

/// gemm_micro_kernel_direct_b for a sliver of Rows <= direct_b_rows_most rows against
/// direct_b_row_vectors<T, Rows> vectors of B's rows at once (several panels): W's rows are
/// swept once for those columns instead of once a panel, each k step reading that many
/// contiguous vectors of a row. Vector j of row 0 of C lands at c[j] (row i at c[j] + i * ldc;
/// bias's vector j at bias + j * width, contiguous), so that a row may span several of
/// gemm_nn_split's column blocks (heads), each vector inside one. The same operations on every
/// element, in the same order, as the one-panel kernels: the same result to the bit.
/// FromMemory (a large B, gemm.hpp's rows_fetch_a_call_ahead): instead of fetching each row's
/// vectors direct_b_ahead steps early into L1, the kernel fetches the same row's next vectors (the
/// next call's, kc steps later) into L2, so that a B in memory is asked for a whole call
/// ahead; docs/performance.md, "A few rows against a large W fetch the next run". LongAhead
/// (and not FromMemory): each row fetched direct_b_long_ahead steps early into L1 instead of
/// direct_b_ahead (gemm.hpp's few_rows_read::rows_long).
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows,
          bool FromMemory = false, bool LongAhead = false>
void gemm_micro_kernel_direct_b_rows(std::size_t kc, const T* __restrict a, const T* __restrict b,
                                     std::size_t ldb, T* const (&c)[direct_b_row_vectors<T, 1>],
                                     std::size_t ldc, T alpha, const T* __restrict bias,
                                     bool load_c) noexcept {
  using V = simd<T>;
  constexpr std::size_t nv = direct_b_row_vectors<T, Rows>;
  V acc[Rows][nv];
  unroll<Rows>([&](auto i) __attribute__((always_inline)) {
    unroll<nv>([&](auto j) __attribute__((always_inline)) {
      acc[i][j] = V::zero();
      __builtin_prefetch(c[j] + i * ldc, 1);
    });
  });
  static_assert(!(FromMemory && LongAhead),
                "the kernels that fetch a call ahead fetch nothing into L1");
  constexpr std::size_t ahead = LongAhead ? direct_b_long_ahead<T, nv> : direct_b_ahead;
  micro_tile_product<T, Rows, Layout, true, nv, FromMemory ? 1 : 0, false, !FromMemory, ahead>(
      kc, a, b, acc, ldb);
  store_tile<T>(acc, alpha, bias, load_c, vectors_at(c, ldc));
}

template <class T>
using gemm_micro_kernel_ptr = void (*)(std::size_t, const T*, const T*, tile_vectors<T>,
                                       std::size_t, T, const T*, bool) noexcept;
template <class T>
using gemm_micro_kernel_direct_b_ptr = void (*)(std::size_t, const T*, const T*, std::size_t,
                                                tile_vectors<T>, std::size_t, T, const T*,
                                                bool) noexcept;
template <class T>
using gemm_micro_kernel_packing_ptr = void (*)(std::size_t, const T*, const T*, std::size_t,
                                               tile_vectors<T>, std::size_t, T, const T*, bool, T*,
                                               std::uintptr_t) noexcept;

/// make(integral_constant<rows>) for rows = Least .. Rows, as an array indexed by rows - Least:
/// a table of one micro-kernel per sliver height, built at compile time, with none for the
/// heights under Least that its caller never has.
template <std::size_t Rows, std::size_t Least = 1, class Make>
constexpr auto table_by_rows(Make make) noexcept {
  static_assert(Least >= 1 && Least <= Rows);
  return [&]<std::size_t... R>(std::index_sequence<R...>) {
    return std::array{make(std::integral_constant<std::size_t, R + Least>{})...};
  }
  (std::make_index_sequence<Rows - Least + 1>{});
}

/// gemm_micro_kernel_direct_b<T, rows, Layout, FetchPanels, FetchNear, Skew> for a run-time row
/// count Least <= rows <= mr: no kernel is instantiated for a height under Least, which a caller
/// that never has one passes (gemm.hpp's gemm_direct_b_block).
template <class T, sliver_layout Layout = sliver_layout::rows, std::size_t FetchPanels = 1,
          bool FetchNear = true, std::size_t Skew = 1, std::size_t Least = 1>
gemm_micro_kernel_direct_b_ptr<T> gemm_micro_kernel_direct_b_for(std::size_t rows) noexcept {
  static constexpr auto table =
      table_by_rows<gemm_tile<T>::mr, Least>([](auto r) -> gemm_micro_kernel_direct_b_ptr<T> {
        return &gemm_micro_kernel_direct_b<T, r(), Layout, FetchPanels, FetchNear, Skew>;
      });
  assert(rows >= Least && rows <= gemm_tile<T>::mr);
  return table[rows - Least];
}

/// The lowest height of the first sliver of several (sliver_cut: ceil(m / s) rows with
/// s = ceil(m / mr) >= 2, so more than mr / 2), the only sliver that packs B as it reads it.
template <class T>
inline constexpr std::size_t packing_rows_lowest = gemm_tile<T>::mr / 2 + 1;

/// gemm_micro_kernel_direct_b_packing<T, rows, Layout, Skew> for a run-time row count
/// packing_rows_lowest <= rows <= mr: no kernel is instantiated for a height that no first
/// sliver of several has.
template <class T, sliver_layout Layout = sliver_layout::rows, std::size_t Skew = 1>
gemm_micro_kernel_packing_ptr<T> gemm_micro_kernel_packing_for(std::size_t rows) noexcept {
  constexpr std::size_t lowest = packing_rows_lowest<T>;
  static constexpr auto table =
      table_by_rows<gemm_tile<T>::mr, lowest>([](auto r) -> gemm_micro_kernel_packing_ptr<T> {
        return &gemm_micro_kernel_direct_b_packing<T, r(), Layout, Skew>;
      });
  assert(rows >= lowest && rows <= gemm_tile<T>::mr);
  return table[rows - lowest];
}

template <class T>
using gemm_micro_kernel_direct_b_rows_ptr = void (*)(std::size_t, const T*, const T*, std::size_t,
                                                     T* const (&)[direct_b_row_vectors<T, 1>],
                                                     std::size_t, T, const T*, bool) noexcept;

/// The most rows of A that gemm.hpp's gemm_row_sweep takes: each vector of B it loads feeds that
/// many multiply-adds, and each vector of partial sums is loaded and stored per row_sweep_rows of
/// B's. AMD EPYC Zen 5 (family 26 model 2), one thread, `bench/ab/ab.sh [--march=x86-64-v3]`
/// against the kernels that fetch a call ahead (the same bits): two rows 1.05-1.29x faster
/// against W 4096 x 4096 and 4000 x 4000 (AVX2 1.18-1.20x), 2560 x 2560 level (1.00, 0.98);
/// three or four rows 0.71-1.01x (AVX2 0.69-1.18x).
inline constexpr std::size_t row_sweep_most = 2;

/// Whether this set reads a large B row by row for one to row_sweep_most rows of A (gemm.hpp's
/// sweeps_b_rows): AVX2 and AVX-512; the portable set's rows measured bimodal (0.88-1.36x).
inline constexpr bool row_sweep_set = simd_bytes >= 32;

/// The fewest rows of a gemm_micro_kernel_direct_b_rows<..., FromMemory> (gemm.hpp's
/// rows_fetch_a_call_ahead decides which runs): the sets that sweep take fewer rows by
/// gemm_row_sweep, so none is instantiated for them (AVX-512's one-row kernel, 16 vectors of a
/// row a step, took 1.04-1.09x as long with as many fetches more; two rows fetching a call ahead
/// gained 1.12x at 4 KiB-multiple strides, the sweep 1.29x); the portable set from one row
/// (8 vectors a step: 1.53-2.46x faster with it).
inline constexpr std::size_t direct_b_rows_from_memory_least =
    row_sweep_set ? row_sweep_most + 1 : 1;

/// How one sliver of A of a few rows reads a row-major B in place (gemm.hpp's few_rows_read_for
/// says which, from the rows, B's size and its row stride):
/// rows_near, gemm_micro_kernel_direct_b_rows fetching each row direct_b_ahead steps ahead into
/// L1; rows_long, the same fetching about 6 KiB of each row's run ahead (direct_b_long_ahead:
/// with AVX-512, against a B of b_past_l2_bytes or more, rows_long_ahead_set); rows_far, the
/// same kernels fetching a call ahead (rows_fetch_a_call_ahead); register_tile,
/// gemm_micro_kernel_direct_b (more than direct_b_rows_most rows, or more than
/// direct_b_rows_near_most against a B of b_past_l2_bytes or more that the rows do not fetch a
/// call ahead).
enum class few_rows_read { rows_near, rows_long, rows_far, register_tile };

/// The gemm_micro_kernel_direct_b_rows that reads B as `read` says (not register_tile) for a
/// run-time row count 1 <= rows <= direct_b_rows_most<T> (rows_far: FromMemory, for rows >=
/// direct_b_rows_from_memory_least; rows_long: LongAhead, instantiated for rows up to
/// direct_b_rows_near_most whose direct_b_long_ahead is more than direct_b_ahead, the near
/// kernel for the others), and the vectors of B's row it covers.
template <class T, sliver_layout Layout = sliver_layout::rows>
std::pair<gemm_micro_kernel_direct_b_rows_ptr<T>, std::size_t> gemm_micro_kernel_direct_b_rows_for(
    std::size_t rows, few_rows_read read) noexcept {
  using pick = std::pair<gemm_micro_kernel_direct_b_rows_ptr<T>, std::size_t>;
  static constexpr auto table = table_by_rows<direct_b_rows_most<T>>([](auto r) {
    return pick{&gemm_micro_kernel_direct_b_rows<T, r(), Layout>, direct_b_row_vectors<T, r()>};
  });
  static constexpr auto far = table_by_rows<direct_b_rows_most<T>>([](auto r) {
    if constexpr (r() < direct_b_rows_from_memory_least)
      return pick{};
    else
      return pick{&gemm_micro_kernel_direct_b_rows<T, r(), Layout, true>,
                  direct_b_row_vectors<T, r()>};
  });
  static constexpr auto longer = table_by_rows<direct_b_rows_most<T>>([](auto r) {
    constexpr std::size_t nv = direct_b_row_vectors<T, r()>;
    if constexpr (!rows_long_ahead_set || r() > direct_b_rows_near_most<T> ||
                  direct_b_long_ahead<T, nv> == direct_b_ahead)
      return pick{&gemm_micro_kernel_direct_b_rows<T, r(), Layout>, nv};
    else
      return pick{&gemm_micro_kernel_direct_b_rows<T, r(), Layout, false, true>, nv};
  });
  assert(rows >= 1 && rows <= direct_b_rows_most<T> && read != few_rows_read::register_tile);
  assert(read != few_rows_read::rows_far || rows >= direct_b_rows_from_memory_least);
  switch (read) {
    case few_rows_read::rows_far:
      return far[rows - 1];
    case few_rows_read::rows_long:
      return longer[rows - 1];
    default:
      return table[rows - 1];
  }
}

/// The micro-kernel on a packed panel (as gemm_micro_kernel) that fetches, a k step at a time,
/// the rows of a row-major B (ldb apart) from the address `ahead` on into L2, as many vectors
/// of each as a panel (micro_tile_product's FetchRows): the slivers after the first of
/// gemm_direct_b_block where the first packs each panel of B as it reads it (packs_page_panels),
/// multiplying its copy and fetching the next panel of B where it lies.
template <class T, std::size_t Rows, sliver_layout Layout = sliver_layout::rows>
void gemm_micro_kernel_fetching_rows(std::size_t kc, const T* __restrict a, const T* __restrict b,
                                     std::size_t ldb, tile_vectors<T> c, std::size_t ldc, T alpha,
                                     const T* __restrict bias, bool load_c,
                                     std::uintptr_t ahead) noexcept {
  gemm_micro_kernel_body<T, Rows, Layout, false, 0, false, true, 1, true>(
      kc, a, b, ldb, vectors_at(c, ldc), alpha, bias, load_c, nullptr, ahead);
}

template <class T>
using gemm_micro_kernel_fetching_rows_ptr = void (*)(std::size_t, const T*, const T*, std::size_t,
                                                     tile_vectors<T>, std::size_t, T, const T*,
                                                     bool, std::uintptr_t) noexcept;

/// gemm_micro_kernel_fetching_rows<T, rows, Layout> for a run-time row count Least <= rows <=
/// Most: no kernel is instantiated for a height its caller never has (gemm.hpp's
/// page_fetching_kernel).
template <class T, sliver_layout Layout, std::size_t Least, std::size_t Most>
gemm_micro_kernel_fetching_rows_ptr<T> gemm_micro_kernel_fetching_rows_for(
    std::size_t rows) noexcept {
  static_assert(Most <= gemm_tile<T>::mr);
  static constexpr auto table =
      table_by_rows<Most, Least>([](auto r) -> gemm_micro_kernel_fetching_rows_ptr<T> {
        return &gemm_micro_kernel_fetching_rows<T, r(), Layout>;
      });
  assert(rows >= Least && rows <= Most);
  return table[rows - Least];
}

/// gemm_micro_kernel<T, rows, Layout, FetchNext> for a run-time row count 1 <= rows <= mr.
template <class T, sliver_layout Layout = sliver_layout::rows, bool FetchNext = false>
gemm_micro_kernel_ptr<T> gemm_micro_kernel_for(std::size_t rows) noexcept {
  static constexpr auto table =
      table_by_rows<gemm_tile<T>::mr>([](auto r) -> gemm_micro_kernel_ptr<T> {
        return &gemm_micro_kernel<T, r(), Layout, FetchNext>;
      });
  return table[rows - 1];
}

}  // namespace detail
}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
