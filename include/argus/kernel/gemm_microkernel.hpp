// argus/kernel/gemm_microkernel.hpp -- kernel layer: the register tile of gemm.hpp.
//
// Defines gemm_tile<T> (the micro-tile and cache-block sizes, all derived from
// simd<T>::width) and gemm_micro_kernel, which multiplies one packed A sliver by one packed
// B panel into an mr x nr tile of C held entirely in registers. Private to gemm.hpp.
#pragma once

#include "argus/kernel/simd.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace argus::kernel::detail {

/// Tile and block sizes of gemm for element type T.
///
/// The micro-tile is mr rows x nr = nv * width columns of C, kept in mr * nv vector
/// accumulators. Each k step loads nv vectors of B and broadcasts mr scalars of A (as an
/// embedded {1toN} operand where the ISA has one), so one step costs nv loads + mr * nv
/// FMAs. The accumulators plus the nv B vectors and one broadcast must fit the register
/// file: AVX-512 (32 registers) takes 14 x 2 (28 + 2 + 1 spare); AVX2 and the portable
/// 16-byte target (16 registers) take 6 x 2 (12 + 2 + 1).
///
/// Blocking (one thread): an A sliver (mr x kc, about 14 KiB for float on AVX-512) stays
/// in L1 while the B block (kc x nc, packed as nr-wide panels) streams from L2.
template <class T>
struct gemm_tile {
  static constexpr std::size_t width = simd<T>::width;
  static constexpr std::size_t registers = simd_bytes == 64 ? 32 : 16;
  static constexpr std::size_t nv = 2;
  static constexpr std::size_t mr = registers == 32 ? 14 : 6;
  static constexpr std::size_t nr = nv * width;
  /// Depth of one k block, and the row stride of a packed A sliver.
  static constexpr std::size_t kc = 256;
  /// Columns of one packed B block (a multiple of nr): kc * nc * sizeof(T) = 512 KiB
  /// for float, half of the smallest L2 the library targets.
  static constexpr std::size_t nc = ((512 * 1024 / sizeof(T) / kc) / nr) * nr;
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

/// C(mr x nr) = alpha * A B + (bias broadcast over rows, if bias) + (C, if load_c).
///
/// a: packed sliver, element (i, p) at a[i * gemm_tile<T>::kc + p], p < kc.
/// b: packed panel, element (p, j) at b[p * nr + j].
/// c: the tile's first element; rows ldc apart; all mr x nr entries are written.
/// bias: nullptr or nr entries for the tile's columns.
template <class T>
inline void gemm_micro_kernel(std::size_t kc, const T* __restrict a, const T* __restrict b,
                              T* __restrict c, std::size_t ldc, T alpha,
                              const T* __restrict bias, bool load_c) noexcept {
  using V = simd<T>;
  using tile = gemm_tile<T>;
  constexpr std::size_t mr = tile::mr, nv = tile::nv, nr = tile::nr, w = tile::width;
  constexpr std::size_t lda = tile::kc;

  V acc[mr][nv];
  unroll<mr>([&](auto i) __attribute__((always_inline)) { unroll<nv>([&](auto j) __attribute__((always_inline)) { acc[i][j] = V::zero(); }); });
  for (std::size_t i = 0; i < mr; ++i) __builtin_prefetch(c + i * ldc, 1);

  for (std::size_t p = 0; p < kc; ++p) {
    V bv[nv];
    unroll<nv>([&](auto j) __attribute__((always_inline)) { bv[j] = V::load(b + j * w); });
    unroll<mr>([&](auto i) __attribute__((always_inline)) {
      const V ai = V::broadcast(a[i * lda]);
      unroll<nv>([&](auto j) __attribute__((always_inline)) { acc[i][j] = fma(ai, bv[j], acc[i][j]); });
    });
    a += 1;
    b += nr;
  }

  const V va = V::broadcast(alpha);
  V vb[nv];
  unroll<nv>([&](auto j) __attribute__((always_inline)) { vb[j] = bias ? V::load(bias + j * w) : V::zero(); });
  unroll<mr>([&](auto i) __attribute__((always_inline)) {
    T* row = c + i * ldc;
    unroll<nv>([&](auto j) __attribute__((always_inline)) {
      V add = vb[j];
      if (load_c) add += V::load(row + j * w);
      fma(acc[i][j], va, add).store(row + j * w);
    });
  });
}

}  // namespace argus::kernel::detail
