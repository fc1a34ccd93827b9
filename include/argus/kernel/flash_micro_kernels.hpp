// argus/kernel/flash_micro_kernels.hpp -- kernel layer: the register-blocked tile kernels
// of flash_attention (flash_attention.hpp holds the algorithm around them).
//
// Layout ("queries on lanes"). A query tile of Q_TILE rows is packed once, scaled and
// transposed, as Qt (D_K, Q_TILE). A score tile is S^T (K_TILE, Q_TILE) = K_tile · Qt: an
// element K[j][c] is broadcast and multiplies a register of queries, so K is read in place
// from the caller's strided rows and never transposed or copied. With queries on lanes, the
// softmax's row maxima and row sums are lane-wise maxima and sums over the key rows of S^T.
// The output accumulator is queries on lanes too, O^T (D_V, Q_TILE): O^T += V^T · P^T
// broadcasts an element V[j][c] and multiplies a register of P^T's row j, the score block's
// structure, and the rescale e^(m_old - m_new) is a lane-wise product. Each V element is read
// once per tile and P^T stays in L1.
//
// Register blocks (AVX-512 float: 32 registers of 16 lanes):
//   score_block       key_block × q_vectors = 6 × 4 accumulators; per feature c: 4 loads of
//                     Qt, 6 broadcasts of K[j][c], 24 FMAs.
//   lane_value_block  value_cols × q_vectors = 6 × 4 accumulators; per key j: 4 loads of
//                     P^T, 6 broadcasts of V[j][c], 24 FMAs.
//                     (Both run broadcast_product, the one loop of broadcasts times
//                     registers of queries; they differ in which index of K or V is
//                     contiguous, and in their prologue and epilogue.)
//   score_dots        tiles of few rows (decode): dot products along d, four rows and
//                     width / 4 keys a block, a register of partial sums per (key, row),
//                     transpose_sum per block (docs/performance.md, "Decoding from memory").
//   value_block       tiles of few rows: the accumulator is (rows, DVP), d_v on lanes
//                     (registers of queries would be mostly empty lanes); row_block ×
//                     col_vectors = 6 × 4; per key: 4 loads of a V row, 6 broadcasts of P.
// 16-register targets (AVX2, the portable fallback) use 6 × 2 for the score and lane-value
// blocks (12 accumulators, 2 registers of queries, 1 broadcast: 15 of 16) and 3 × 3 for
// value_block. Measured on Zen 1 (AVX2, docs/performance.md): a 6 × 2 score block the same
// as 5 × 2; on Zen 4 (AVX2 build) 6 × 2 for both blocks 2.1-2.7 % faster than 5 × 2, the
// portable build 0.8 %; the row-major value block (queries on rows, d_v on lanes) 4 × 2,
// 4 × 3 and 3 × 3 at 83 % of the FMA peak in the loop nest against 92 % for the score block,
// hence lane_value_block for every tile of more than dot_rows rows.
#pragma once

#include "argus/kernel/cpu_caches.hpp"
#include "argus/kernel/simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {
namespace detail {

/// Register blocking and tile sizes of flash_attention for element type T on this target.
/// Accumulators plus the operands in flight must fit the register file.
template <class T>
struct flash_blocking {
  static constexpr std::size_t width = simd<T>::width;
  static constexpr bool wide = simd_bytes == 64;  // AVX-512: 32 registers, else 16
  static constexpr std::size_t q_vectors = wide ? 4 : 2;
  /// Query rows per tile: one register of queries per q_vector (64 floats on AVX-512).
  static constexpr std::size_t q_tile = q_vectors * width;
  static constexpr std::size_t key_block = 6;   // score block: key_block × q_vectors
  static constexpr std::size_t value_cols = 6;  // lane_value_block: value_cols × q_vectors
  static constexpr std::size_t row_block = wide ? 6 : 3;  // value block: row_block × col_vectors
  static constexpr std::size_t col_vectors = wide ? 4 : 3;
  /// The K tile and the V tile together stay within this many bytes: 48 KiB, 96 keys at d 64
  /// float. A tile's fixed costs (each row set's query and accumulator tiles fetched again,
  /// each register block's accumulators loaded and stored, the softmax's per-column steps)
  /// weigh less the more keys it has, while K and V rows that L1 cannot keep stream from L2 as
  /// the products read them: one tile's passes, each repeated hot, run at the same share of
  /// the peak at 60 keys and at 96 (bench_kernel_attention's flash_tile_parts), so what the
  /// larger tile saves is in going from tile to tile and from row set to row set. 16-register
  /// targets (query tiles of 16 rows): on Zen 3 (32 KiB L1d) 96 keys made the core 1.1-2.2 % faster
  /// than 60 on 1 thread, 0.7-2.3 % on 2, the MHA's kernels 0.4-1.1 %; 126 keys no faster than
  /// 96, 30 keys 5 % slower; Zen 4's AVX2 build 1.006, the portable kernels (SSE2) on Zen 3
  /// 0.998 and 1.007. AVX-512 (query tiles of 64 rows) took 32 KiB until 2026-12-02, so that K
  /// and V sat in a 48 KiB L1 beside the score tile: on Zen 5 (48 KiB L1d) 48 KiB makes the core
  /// 1.6-2.3 % faster at n 1024 (causal 2.1-5.1 %, n 4096-8192 0.7-2.5 %), the MHA's kernels
  /// 0-1.8 %, 32 heads decoding over 8 at d 64 1.12-1.13x; Zen 4 (32 KiB L1d)
  /// measured 1.003-1.012, an Intel Xeon 6/167 36 and 40 KiB within its noise (-1.4 % to +0.3 %),
  /// and no Intel host has measured 48 yet (docs/performance.md, "K and V tiles of 48 KiB on
  /// AVX-512").
  static constexpr std::size_t kv_tile_bytes = std::size_t{48} * 1024;
  /// Query rows (over the heads of a K/V group) that one work item of flash_attention
  /// holds, in whole query tiles, when there are items enough for the threads: every K/V
  /// tile it fetches, cache lines and pages, serves that many rows. With K and V rows 2 KiB
  /// apart (split-heads views of a (batch, seq, 512) matrix) a tile of 60 keys spans 30
  /// pages each; at n 4096 a head's K and V span 4096 pages, more than the L2 TLB holds,
  /// and on a virtual machine every miss is a two-level page walk. Measured on Zen 1 (KVM):
  /// 128 rows against 16 make the core on such views 1.6x faster at n 4096, the same on
  /// contiguous heads (docs/performance.md).
  static constexpr std::size_t item_rows = 128;
  /// Tiles of at most dot_rows rows take score_dots and value_block: their registers of
  /// queries would be mostly empty lanes.
  static constexpr std::size_t dot_rows = q_tile / 4;

  /// The fewest keys a tile of query rows on lanes takes, whatever kv_tile_bytes allows:
  /// AVX-512, 60 (ten key blocks). Each key tile reloads the query tile and rescales and stores
  /// the accumulator tile (64 rows of d_k and of d_v), work that only more keys a tile
  /// amortise; from d 96 on those two tiles alone outgrow a 48 KiB L1, so that smaller K and
  /// V tiles no longer buy L1 residency, only more reloads (at d 128 kv_tile_bytes alone gives
  /// 48 keys, at d 256 24). With the floor, against the 32 KiB tiles of AVX-512 before
  /// 2026-12-02 (d 128: 30 keys, d 256: 12), Zen 5 (bench/ab/ab.sh, 1 thread, n 2048): d 128
  /// 1.034-1.037x faster (causal 1.051, 2 threads 1.023, n 4096 1.034), d 256 1.124x, d 96
  /// 1.014x, d 80 1.006x; d 64 float the same tile (double: 1.03x at d 64, 1.12-1.15x at d 128).
  /// 16-register targets keep key_block: their tiles are 16 rows, and the same floor
  /// measured 0.996-1.012 there. The floor holds where flash_attention.hpp's takes_key_floor
  /// says: row sets of queries on lanes, and decode-shaped problems (keys split into chunks:
  /// d 256 up to 1.6x faster with it, d 128 0.96-1.21x); not a few rows taken tile by tile
  /// (fewer than 8 keys a query), as were a token's few heads of a group over 60-255 keys
  /// before decode_shaped took them, where 60 keys took 4-12 % longer than 30 at d 128
  /// (docs/performance.md, "Key tiles of wide heads").
  static constexpr std::size_t min_keys = wide ? 10 * key_block : key_block;
  /// Keys per tile for head widths d_k, d_v: a multiple of key_block whose K and V tiles fit
  /// kv_tile_bytes (at d = 64 float: 96 keys), with `floor` at least min_keys.
  static constexpr std::size_t k_tile(std::size_t d_k, std::size_t d_v, bool floor) noexcept {
    const std::size_t keys = kv_tile_bytes / ((d_k + d_v) * sizeof(T)) / key_block * key_block;
    return std::clamp(keys, floor ? min_keys : key_block, 16 * key_block);
  }
  /// d rounded up to whole registers.
  static constexpr std::size_t padded(std::size_t d) noexcept {
    return (d + width - 1) / width * width;
  }
};

/// 2^x = p(r) · 2^n with x = n + r, n an integer, p a degree-6 polynomial with p(0) = 1 fitted
/// to 2^r over r's range. exp2_nonpositive takes one of two reductions, each with its own fit:
///   centred, r = x - round(x) in [-1/2, 1/2]: the Chebyshev interpolant of e^t on
///     |t| <= ln2/2 written in r = t / ln 2 (relative error 2e-8 before rounding);
///   fraction, r = x - floor(x) in [0, 1] (one vreduceps where AVX-512 DQ has it): a near-minimax
///     fit of the relative error (Lawson's iteration on 4001 points, in double) holding p(1) = 2
///     as well, so that an x just below an integer, whose fraction rounds to 1, gives the value at
///     the integer; its float coefficients then moved by a few ulp where that lowered the error
///     of the float evaluation (searched over 1.7e8 arguments).
/// Measured against std::exp2 over every float x in [-2, 0), evaluated as exp2_nonpositive does
/// (docs/performance.md, "The exponential's fraction by vreduceps"): centred 8.4e-8 worst
/// relative error, 8.8e-9 rms; fraction 9.1e-8 and 1.2e-8, mean -1e-9.
inline constexpr float exp2_centred_coefficients[] = {1.54614448547e-4f,
                                                      1.34004279971e-3f,
                                                      9.61805600673e-3f,
                                                      5.55032715201e-2f,
                                                      2.40226507187e-1f,
                                                      6.93147182465e-1f,
                                                      1.0f};
inline constexpr float exp2_fraction_coefficients[] = {2.171500964e-4f,
                                                       1.244089566e-3f,
                                                       9.678092785e-3f,
                                                       5.548415706e-2f,
                                                       2.402295172e-1f,
                                                       6.931470037e-1f,
                                                       1.0f};

/// double: 2^r = 1 + r · q(r) on r = x - round(x) in [-1/2, 1/2], q of degree 10 the Chebyshev
/// interpolant of (2^r - 1) / r at 11 nodes, computed to 80 digits (its series, no cancellation
/// at r near 0) and rounded to double by tools/exp2_double_fit.py (ctest tools.exp2_double_fit:
/// these are its output); p(0) = 1 exactly. Evaluated as exp2_nonpositive does (FMA,
/// the reduction below) against exp2l over 2e7 arguments in [-60, 8] and those next to each
/// integer and half-integer down to -1021: worst 0.89 ulp, rms 0.30 ulp (glibc's exp2 0.51);
/// degree 10 was 4.4 ulp at worst, degree 12 no better than 11 (docs/performance.md, "Double's
/// exponential in registers").
inline constexpr double exp2_double_coefficients[] = {
    4.4549605981865186e-10, 7.072585949269223e-09, 1.0178062445845774e-07, 1.321544258792169e-06,
    1.525273382983612e-05,  0.0001540353044173605, 0.0013333558146416936,  0.009618129107606888,
    0.0555041086648216,     0.24022650695910097,   0.6931471805599453,     1.0};

/// p(r) lane-wise for the coefficients c (highest degree first), N registers at once.
template <class V, class S, std::size_t N, std::size_t K>
[[gnu::always_inline]] inline void exp2_polynomial(const S (&c)[K], const V (&r)[N],
                                                   V (&p)[N]) noexcept {
#pragma GCC unroll 8
  for (std::size_t i = 0; i < N; ++i) p[i] = fma(V::broadcast(c[0]), r[i], V::broadcast(c[1]));
#pragma GCC unroll 8
  for (std::size_t k = 2; k < K; ++k)
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) p[i] = fma(p[i], r[i], V::broadcast(c[k]));
}

/// The constants of exp2_nonpositive's way without AVX-512's instructions, by element type:
/// adding `shifter` (1.5 · 2^mantissa_bits + bias) rounds x to an integer n and leaves n + bias
/// in the low mantissa bits, from which a shift makes 2^n; x is first clamped to `lowest` (-bias),
/// where 2^n is +0; p, the centred polynomial.
template <class T>
struct exp2_by_shifting;
template <>
struct exp2_by_shifting<float> {
  using bits = std::uint32_t __attribute__((vector_size(simd_bytes)));  // a register's lanes
  static constexpr int mantissa_bits = 23;
  static constexpr float shifter = 12582912.0f + 127.0f, lowest = -127.0f;
  static constexpr const auto& coefficients = exp2_centred_coefficients;
};
template <>
struct exp2_by_shifting<double> {
  using bits = std::uint64_t __attribute__((vector_size(simd_bytes)));
  static constexpr int mantissa_bits = 52;
  static constexpr double shifter = 6755399441055744.0 + 1023.0, lowest = -1023.0;
  static constexpr const auto& coefficients = exp2_double_coefficients;
};

/// 2^x lane-wise, N registers at once, by exp2_by_shifting<T>'s constants (exp2_nonpositive).
template <class T, std::size_t N>
[[gnu::always_inline]] inline void exp2_shifted(simd<T> (&x)[N]) noexcept {
  using C = exp2_by_shifting<T>;
  using V = simd<T>;
  V n[N], r[N], p[N];  // n: n + shifter
  const V shifter = V::broadcast(C::shifter);
  V lowest = V::broadcast(C::lowest);
  // Opaque to the optimiser, so that max(lowest, x) stays one max instruction (with a
  // known constant, GCC swaps the comparison and emits a compare and a blend).
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(lowest.v));
#endif
#pragma GCC unroll 8
  for (std::size_t i = 0; i < N; ++i) x[i] = max(lowest, x[i]);  // NaN: max returns x[i]
#pragma GCC unroll 8
  for (std::size_t i = 0; i < N; ++i) n[i] = x[i] + shifter;
#pragma GCC unroll 8
  for (std::size_t i = 0; i < N; ++i) r[i] = x[i] - (n[i] - shifter);
  exp2_polynomial(C::coefficients, r, p);
  // The lanes' bits: a vector type of a specialisation (a dependent vector_size would be dropped).
  using U = typename C::bits;
  static_assert(sizeof(U) == sizeof(typename V::native));
#pragma GCC unroll 8
  for (std::size_t i = 0; i < N; ++i) {
    U bits;
    std::memcpy(&bits, &n[i].v, sizeof bits);
    bits <<= C::mantissa_bits;  // n + bias in the exponent field, 0 in the mantissa: 2^n
    V scale;
    std::memcpy(&scale.v, &bits, sizeof bits);
    x[i] = p[i] * scale;
  }
}

/// 2^x lane-wise for x <= 8 (the construction holds below 128): the softmax's arguments,
/// (s - m) · log2 e with m at most rescale_slack below s. N registers at once: each step runs
/// on all N before the next, so that N independent chains are in flight (Zen 1's FP scheduler
/// holds about one chain's worth of operations; measured in docs/performance.md). float:
/// x = n + r and 2^r by a polynomial (the coefficients above), no Cody-Waite split
/// (which e^x needs for n ln 2): the reductions below are exact, but for x - floor(x) at
/// -1 < x < 0, 1 + x rounded to float (by at most 2^-25: 2e-8 of 2^r). The result is
/// p · 2^n, rounded once. -inf and every x <= -126.5 give exactly 0, x down to -126 a normal
/// number, a NaN gives NaN. The ways, by target:
///   AVX-512 with DQ: r = x - floor(x) in one vreduceps and p · 2^floor(x) in one vscalefps
///     (which floors its exponent operand itself), whose mask zeroes x <= -126.5: 9 vector
///     operations (the loop nest 1.0-1.4 % faster than with the rounding by vrndscaleps and
///     a subtraction on an Intel Xeon, docs/performance.md "The exponential's fraction by
///     vreduceps").
///   AVX-512 without DQ: n = round(x) by vrndscaleps, r = x - n, p · 2^n by vscalefps; 10.
///   Elsewhere: x is clamped to -127 from below (a NaN stays NaN), n comes from adding a
///     rounding constant t (whose low mantissa bits then hold n + 127) and 2^n from t's bits
///     (+0 for n = -127); 12 vector operations, 7 of them FMAs or products.
/// The last two agree to the bit but at half-integer x, where the first rounds n to even and
/// the second n + 127 (equally exact reductions, results within an ulp; docs/performance.md,
/// "The exponential with vscalefps"); the first differs from them by about an ulp (another
/// polynomial). double, every target: the last way with a degree-11 polynomial
/// (exp2_double_coefficients; within 0.9 ulp of 2^x, 1.2 without FMA), 17 vector operations,
/// 12 of them FMAs or products; -inf and every x < -1022.5 give exactly 0, x down to -1022 a
/// normal number. (Until 2026-12-03 std::exp2 lane by lane: the loop nest in double took 3.5
/// times as long as in float, about 2.1 times since.)
template <class T, std::size_t N>
[[gnu::always_inline]] inline void exp2_nonpositive(simd<T> (&x)[N]) noexcept {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    using V = simd<float>;  // not simd<T>: a dependent vector_size would be dropped
    V r[N], p[N];
    const V floor = V::broadcast(-126.5f);
#if defined(__AVX512DQ__)
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) r[i] = fraction_above_floor(x[i]);
    exp2_polynomial(exp2_fraction_coefficients, r, p);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) x[i] = scale_by_exp2(p[i], x[i], x[i], floor);
#else
    V n[N];
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) n[i] = round_to_integer(x[i]);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) r[i] = x[i] - n[i];
    exp2_polynomial(exp2_centred_coefficients, r, p);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < N; ++i) x[i] = scale_by_exp2(p[i], n[i], x[i], floor);
#endif
#else
    exp2_shifted(x);
#endif
  } else {
    static_assert(std::is_same_v<T, double>);
    exp2_shifted(x);
  }
}

/// exp2_nonpositive of one register.
template <class T>
[[gnu::always_inline]] inline simd<T> exp2_nonpositive(simd<T> x) noexcept {
  simd<T> one[1] = {x};
  exp2_nonpositive(one);
  return one[0];
}

// ---------------------------------------------------------------------------------------
// The register block both products of a tile share (queries on lanes).

/// acc[a][v] += Σ_i x[a, i] · y[i][v · width ..] for a < A, v < QV, i < depth: an element of
/// x is broadcast and multiplies a register of y, a (depth, q_tile) tile. x[a, i] is
/// x[i · stride + a] when ContiguousA (V in lane_value_block: a = column, i = key) and
/// x[a · stride + i] otherwise (K in score_block: a = key, i = feature), so the contiguous
/// index's step is a compile-time 1. Per step of i: QV loads of y, A broadcasts, A · QV FMAs.
template <class T, std::size_t A, std::size_t QV, bool ContiguousA>
[[gnu::always_inline]] inline void broadcast_product(simd<T> (&acc)[A][QV], std::size_t depth,
                                                     const T* x, std::size_t stride,
                                                     const T* y) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  // Four steps per loop iteration: on Zen 4 the loop nest ran 1.2-2.3 % faster than with
  // one (flash_attention called alternately in one process, AVX-512 and AVX2 builds,
  // docs/performance.md "Four steps per iteration").
#pragma GCC unroll 4
  for (std::size_t i = 0; i < depth; ++i) {
    V yi[QV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < QV; ++v) yi[v] = V::load(y + i * tile + v * w);
#pragma GCC unroll 16
    for (std::size_t a = 0; a < A; ++a) {
      const V xa = V::broadcast(ContiguousA ? x[i * stride + a] : x[a * stride + i]);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < QV; ++v) acc[a][v] = fma(xa, yi[v], acc[a][v]);
    }
  }
}

/// Bytes of K ahead of the keys being scored that key_stream::fetch asks for.
inline constexpr std::size_t key_fetch_ahead_bytes = 8192;

/// Keys ahead of the V row a value pass over a set of `rows` rows reads whose same columns it
/// fetches (value_tile, key_stream::fetch_values): a number of keys, not of bytes, as a pass
/// over a register block of columns spends rows × registers multiply-adds on a key whatever d
/// is, and so as many more keys for fewer rows, that the fetches lead the reads by about as long.
/// Zen 4, from memory, V fetched by the value passes alone: 4 rows 8 KiB on, as K (16 keys at d
/// 128, 8 at d 256), 1.20-1.42x faster than V fetched as the tile was scored but d 256 from L3
/// 0.79-0.87x (its passes outran the fetches); 48 to 128 keys 1.03-1.58x with AVX-512, 1.07-1.96x
/// with AVX2, level among themselves; one row, one call over 32 MiB repeated (AVX2), 64 keys
/// 0.72-0.82x, 256 keys 0.81-0.87x (docs/performance.md, "Fetching V as the values read it").
constexpr std::size_t value_fetch_ahead_keys(std::size_t rows) noexcept {
  return 256 / std::clamp<std::size_t>(rows, 1, 4);
}

/// A decode item's K and V, read once a call (flash_attention.hpp's streams_keys; in a model
/// from memory): as score_dots (few rows) or score_tile (rows on lanes) scores a block of keys,
/// it fetches K's rows key_fetch_ahead_bytes further on and the same keys' V rows, which the
/// value product reads next, into L1 (prefetcht0: a line evicted from L1 before its use then
/// waits in L2) on cores with 48 KiB of L1 data cache or more, into L2 only (prefetcht1) on
/// smaller ones (into_l1: cpu_caches.hpp's roomy_l1d). Few rows fetch V again as value_tile
/// reads it: each pass the same columns of a row value_fetch_ahead_keys further on, into L2
/// (fetch_values), so that the value product too keeps fetches in flight, where before the
/// scores' fetches filled the memory queue and the value product left it idle. Zen 4 (32 KiB
/// L1d), K and V from memory on 2 MiB pages: 4 rows a K/V head, d 64-256, 1.39-1.62x faster
/// on 1 thread with AVX-512 (1.28-1.56x AVX2), 1.10-1.39x on 2; one row 1.08-1.27x, 8 rows
/// 1.27-1.31x (AVX-512); on 4 KiB pages 1.06-1.17x with AVX-512 but 0.93-1.05x with AVX2, and a
/// call repeated over K and V that stay in L3 0.92-0.96x (AVX2 0.83-0.85x): the price of
/// fetches whose lines are there already. With V fetched by the value passes alone: one row
/// repeated over 32 MiB 0.72-0.87x (AVX2), d 256 with AVX-512 1.16x against 1.5x
/// (docs/performance.md, "Fetching V as the values read it"). One query of 32
/// heads over 8 K/V heads, d 128, K and V from memory, the same AVX-512 code, before those
/// second fetches: Zen 5 (48 KiB L1d) 1.36-1.38x faster with both into L1 than with nothing
/// fetched, V into L2 only up to 1.2x slower than into L1; Zen 4 1.3-1.6x faster (AVX2
/// 1.4-1.8x) with both into L2 than into L1, K into L1 even 2 KiB ahead 0.75-0.90x of that. The
/// hardware's prefetchers alone left the loads waiting: the same call on Zen 5, 1 thread,
/// 1.15-1.73x faster with the fetches and the four-row blocks of score_dots; rows on lanes (32
/// and 64 heads over one K/V head) 1.11-1.20x (AVX-512, AVX2), and 1.06-1.35x more with a
/// block's fetches spread over d (fetch_bytes, score_block); a model's layers of 2-8 MiB, which
/// fetched nothing before, 1.29-1.51x. V non-temporal (prefetchnta) was 0.9-1.1x with AVX2 and
/// 0.8-1.0x with AVX-512 there (0.83-0.95x on Zen 4), and its lines, which skip L2 when evicted,
/// would come from memory twice where the tile outgrows L1 (AVX2's 48 KiB tiles, 32 KiB L1s).
/// Where one call is repeated over K and V that stay in L2 or L3, the fetches cost Zen 5 up to
/// 18 % (docs/performance.md, "Decoding from memory", "Every decode item streams", "Fetching
/// into L1 or L2"). The addresses are integers: rows past the last key are fetched, never read.
struct key_stream {
  std::uintptr_t k;                            // the tile's first K row
  std::uintptr_t v;                            // and V row
  std::size_t n;                               // the tile's keys
  std::size_t k_row, v_row, k_bytes, v_bytes;  // row strides and row lengths, in bytes
  std::size_t ahead_keys;  // key_fetch_ahead_bytes / k_bytes, divided once a tile, not a block
  bool into_l1;            // roomy_l1d(): prefetcht0, else prefetcht1

  /// For keys [j0, j1) of the tile: K's rows key_fetch_ahead_bytes on (at least j1 - j0 keys),
  /// and their own V rows.
  [[gnu::always_inline]] void fetch(std::size_t j0, std::size_t j1) const noexcept {
    fetch_bytes(j0, j1, 0, k_bytes);
  }

  /// Into L2, the lines of V row j of the tile (past its last key: the next tile's) that start
  /// in bytes [b0, b1) of the row: a value pass over those bytes of a row asks for the row
  /// value_fetch_ahead_keys further on.
  [[gnu::always_inline]] void fetch_values(std::size_t j, std::size_t b0,
                                           std::size_t b1) const noexcept {
    value_lines(
        j, b0, b1, [](std::uintptr_t line) __attribute__((always_inline)) {
          // NOLINTNEXTLINE(performance-no-int-to-ptr): a hint's address, never dereferenced
          __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 2);
        });
  }

  /// sink(address) for each line fetch_values(j, b0, b1) asks for: the passes of value_tile,
  /// which split a row's bytes, ask for each line of its first v_bytes once.
  template <class Sink>
  [[gnu::always_inline]] void value_lines(std::size_t j, std::size_t b0, std::size_t b1,
                                          Sink sink) const noexcept {
    const std::uintptr_t row = v + j * v_row;
    for (std::size_t x = (b0 + 63) / 64 * 64; x < std::min(b1, v_bytes); x += 64) sink(row + x);
  }

  /// fetch(j0, j1)'s lines that start in bytes [b0, b1) of the rows (of V's rows, to their end
  /// where b1 is K's row length): a block of keys spreads its fetches over d, the lines of the
  /// features it multiplies at each step, each line once over the steps.
  [[gnu::always_inline]] void fetch_bytes(std::size_t j0, std::size_t j1, std::size_t b0,
                                          std::size_t b1) const noexcept {
    if (into_l1)
      fetch_lines<3>(j0, j1, b0, b1);
    else
      fetch_lines<2>(j0, j1, b0, b1);
  }

 private:
  /// fetch_bytes with __builtin_prefetch's locality: 3 prefetcht0, 2 prefetcht1.
  template <int Locality>
  [[gnu::always_inline]] void fetch_lines(std::size_t j0, std::size_t j1, std::size_t b0,
                                          std::size_t b1) const noexcept {
    const std::size_t ahead = std::max(j1 - j0, ahead_keys);
    const std::size_t first = (b0 + 63) / 64 * 64;
    const std::size_t v_end = b1 >= k_bytes ? v_bytes : std::min(b1, v_bytes);
    for (std::size_t j = j0; j < j1; ++j) {
      for (std::size_t x = first; x < b1; x += 64) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): a hint's address, never dereferenced
        __builtin_prefetch(reinterpret_cast<const void*>(k + (j + ahead) * k_row + x), 0, Locality);
      }
      if (j < n)
        for (std::size_t x = first; x < v_end; x += 64) {
          // NOLINTNEXTLINE(performance-no-int-to-ptr): a hint's address, never dereferenced
          __builtin_prefetch(reinterpret_cast<const void*>(v + j * v_row + x), 0, Locality);
        }
    }
  }
};

/// f(std::integral_constant<std::size_t, D>{}) with D = d where d is 64 or 128, else D = 0 (d
/// at run time): the score kernels (score_tile, score_dots) and the few-row value kernel
/// (value_tile) fix those head widths at compile time; the rest of the loop nest takes d at run
/// time. At run-time width, with AVX-512, Clang 14's score blocks ran 0.6-2 % slower (GCC 12's
/// level), and one query row a K/V head (decode without grouped heads) took 1.12x as long at d
/// 128 (GCC; docs/performance.md, "One loop nest for every head width").
template <class F>
[[gnu::always_inline]] inline void with_fixed_width(std::size_t d, F&& f) {
  if (d == 64)
    f(std::integral_constant<std::size_t, 64>{});
  else if (d == 128)
    f(std::integral_constant<std::size_t, 128>{});
  else
    f(std::integral_constant<std::size_t, 0>{});
}

// ---------------------------------------------------------------------------------------
// Scores: S^T = K · Qt.

/// st[j][r] = Σ_c k[j][c] · qt[c][r] for j < Keys, r < QV · width (st and qt have rows of
/// q_tile, d = d_k); top[r] is raised to the block's maximum of column r. With `fetch` (the
/// Fetch instantiation: a decode item's keys [j, j + Keys) of the tile), the block's fetches
/// are spread over d: a line of each key's K and V rows every fetch_steps features, not all of
/// them at its start, whose burst filled the fetch queue and stalled the block (32 query heads
/// over one K/V head of d 128, 8192 keys from memory: 1.3x as fast). D != 0 fixes d_k.
template <class T, std::size_t Keys, std::size_t QV, bool Fetch = false, std::size_t D = 0>
inline void score_block(const T* k, std::size_t k_row, const T* qt, std::size_t d_k, T* st, T* top,
                        const key_stream* fetch = nullptr, std::size_t j = 0) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  const std::size_t d = D != 0 ? D : d_k;
  V acc[Keys][QV];
#pragma GCC unroll 16
  for (std::size_t a = 0; a < Keys; ++a)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < QV; ++v) acc[a][v] = V::zero();
  if constexpr (Fetch) {
    constexpr std::size_t fetch_steps = 64 / sizeof(T);  // a line of each key's row a chunk
    for (std::size_t c = 0; c < d; c += fetch_steps) {
      const std::size_t steps = std::min(fetch_steps, d - c);
      fetch->fetch_bytes(j, j + Keys, c * sizeof(T), (c + steps) * sizeof(T));
      broadcast_product<T, Keys, QV, false>(acc, steps, k + c, k_row, qt + c * tile);
    }
  } else {
    (void)fetch, (void)j;
    broadcast_product<T, Keys, QV, false>(acc, d, k, k_row, qt);
  }
#pragma GCC unroll 4
  for (std::size_t v = 0; v < QV; ++v) {
    V even = V::load(top + v * w), odd = acc[0][v];  // two chains of maxima
#pragma GCC unroll 16
    for (std::size_t a = 0; a < Keys; ++a) {
      acc[a][v].store(st + a * tile + v * w);
      if (a % 2 == 0)
        even = max(even, acc[a][v]);
      else
        odd = max(odd, acc[a][v]);
    }
    max(even, odd).store(top + v * w);
  }
}

/// The last n < key_block keys of a score tile of `keys` keys from k (st's rows and K's keys
/// counted from there). A tile of at least key_block keys scores its last key_block keys again
/// as one whole block, shifted back over keys already scored: their scores come out the same
/// bits (each is the same chain of multiply-adds over d, whatever the block) and their maxima
/// are in top already. A shorter tile scores one key at a time. So of the blocks of fewer than
/// key_block keys only the one-key block is compiled: the others were most of score_block's code
/// (docs/contributing/testing.md, item 17). A NaN score seen twice may leave another
/// NaN-or-number in top than seen once (max keeps its second operand where either is NaN):
/// the same output, as the NaN itself reaches the row's sum (docs/reference/semantics.md,
/// rule 3).
template <class T, std::size_t QV, std::size_t D>
inline void score_tail(std::size_t n, std::size_t keys, const T* k, std::size_t k_row, const T* qt,
                       std::size_t d_k, T* st, T* top) noexcept {
  constexpr std::size_t kb = flash_blocking<T>::key_block, tile = flash_blocking<T>::q_tile;
  const std::size_t j = keys - n;  // the tail's first key
  if (keys >= kb) {
    const std::size_t back = keys - kb;
    return score_block<T, kb, QV, false, D>(k + back * k_row, k_row, qt, d_k, st + back * tile,
                                            top);
  }
  for (std::size_t u = j; u < keys; ++u)
    score_block<T, 1, QV, false, D>(k + u * k_row, k_row, qt, d_k, st + u * tile, top);
}

template <class T, std::size_t QV, std::size_t D>
inline void score_columns(std::size_t n, const T* k, std::size_t k_row, const T* qt,
                          std::size_t d_k, T* st, T* top, const key_stream* stream) noexcept {
  constexpr std::size_t kb = flash_blocking<T>::key_block, tile = flash_blocking<T>::q_tile;
  std::size_t j = 0;
  for (; j + kb <= n; j += kb) {
    if (stream != nullptr)
      score_block<T, kb, QV, true, D>(k + j * k_row, k_row, qt, d_k, st + j * tile, top, stream, j);
    else
      score_block<T, kb, QV, false, D>(k + j * k_row, k_row, qt, d_k, st + j * tile, top);
  }
  if (j < n) {
    if (stream != nullptr) stream->fetch(j, n);
    score_tail<T, QV, D>(n - j, n, k, k_row, qt, d_k, st, top);
  }
}

/// The score tile S^T (n, Q_TILE) of n keys starting at k, for the first `lanes` columns
/// (the rest are not written), and its column maxima top; with `stream`, fetching K and V
/// ahead block by block of keys as it goes.
template <class T>
inline void score_tile(std::size_t lanes, std::size_t n, const T* k, std::size_t k_row, const T* qt,
                       std::size_t d_k, T* st, T* top,
                       const key_stream* stream = nullptr) noexcept {
  using blocking = flash_blocking<T>;
  constexpr std::size_t qv = blocking::q_vectors, w = blocking::width;
  std::fill(top, top + lanes, -std::numeric_limits<T>::infinity());
  with_fixed_width(d_k, [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
    if constexpr (qv >= 4) {
      if (lanes <= qv / 2 * w)  // a half-empty tile (the last one of a sequence)
        return score_columns<T, qv / 2, D>(n, k, k_row, qt, d_k, st, top, stream);
    }
    score_columns<T, qv, D>(n, k, k_row, qt, d_k, st, top, stream);
  });
}

/// The lanes of a full query tile by halves, for targets of four registers of queries
/// (AVX-512): under a causal mask the keys of a tile that only the rows of one half of its
/// lanes see (past the lower half's reach, or before the upper half's window) are scored
/// (score_lanes) and summed into the output (lane_value_lanes) for that half alone, halving the
/// triangle beyond its rows' keys that a tile of q_tile rows computes on each diagonal. A half
/// runs the half-empty tile's kernels (q_vectors / 2 registers) on pointers moved by half a
/// tile: nothing more is compiled.
template <class T>
inline constexpr bool splits_lane_halves = flash_blocking<T>::q_vectors >= 4;

/// Which lanes of a tile a call takes: the lower half, the upper half, or every lane.
enum class lane_half : unsigned char { lower, upper, every };

/// score_tile for n keys from k on the lanes `which` takes (lane_half::every: q_tile lanes),
/// st's and top's lanes of them; top is raised, not reset (score_tile resets it). With `stream`
/// (n keys from the tile's first), fetching ahead as score_tile does.
template <class T>
inline void score_lanes(lane_half which, std::size_t n, const T* k, std::size_t k_row, const T* qt,
                        std::size_t d_k, T* st, T* top, const key_stream* stream) noexcept {
  using blocking = flash_blocking<T>;
  constexpr std::size_t qv = blocking::q_vectors, half = blocking::q_tile / 2;
  if constexpr (splits_lane_halves<T>) {  // else never called (flash_attention.hpp, halves_of)
    with_fixed_width(d_k, [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
      if (which == lane_half::every)
        return score_columns<T, qv, D>(n, k, k_row, qt, d_k, st, top, stream);
      const std::size_t at = which == lane_half::upper ? half : 0;
      score_columns<T, qv / 2, D>(n, k, k_row, qt + at, d_k, st + at, top + at, stream);
    });
  } else {
    (void)which, (void)n, (void)k, (void)k_row, (void)qt, (void)d_k, (void)st, (void)top,
        (void)stream;
  }
}

/// The scores of R rows against keys [0, n), as score_dots says, R rows (q[0..R)) and w / R
/// keys a block (w = the register width): one register of partial sums per (key, row) pair, w
/// of them, each loaded vector of K multiplied by the R rows' and each of Q by the block's keys;
/// transpose_sum turns them into one register whose lane u · R + r holds key u's score for row r.
/// top[r] gets row r's greatest score. D != 0 fixes d_k (with_fixed_width).
template <class T, std::size_t D, std::size_t R>
[[gnu::always_inline]] inline void score_dot_rows(const T* const* q, T scale, std::size_t d_k,
                                                  std::size_t n, const T* k, std::size_t k_row,
                                                  T* st, T* top,
                                                  const key_stream* stream) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile, keys = w / R;
  static_assert(R >= 1 && w % R == 0);
  const std::size_t d = D != 0 ? D : d_k;
  V best = V::broadcast(-std::numeric_limits<T>::infinity());
  for (std::size_t j = 0; j < n; j += keys) {
    // The last block repeats key n - 1 in its missing lanes (never stored).
    const T* kj[keys];
#pragma GCC unroll 16
    for (std::size_t u = 0; u < keys; ++u) kj[u] = k + std::min(j + u, n - 1) * k_row;
    if (stream != nullptr) stream->fetch(j, j + keys);
    V part[w];
#pragma GCC unroll 16
    for (std::size_t x = 0; x < w; ++x) part[x] = V::zero();
    // One step of d: R vectors of Q, one of K per key, R multiply-adds on each. Two steps are
    // unrolled below: eight let the compiler hoist later steps' loads, and with 8 rows at d 128
    // it reloaded Q inside the block (1.25x as long; four steps 1.03x; Zen 5).
    std::size_t c = 0;
    const auto chunk = [&](auto load) __attribute__((always_inline)) {
      V qv[R];
#pragma GCC unroll 16
      for (std::size_t r = 0; r < R; ++r) qv[r] = load(q[r] + c);
#pragma GCC unroll 16
      for (std::size_t u = 0; u < keys; ++u) {
        const V kv = load(kj[u] + c);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < R; ++r) part[u * R + r] = fma(qv[r], kv, part[u * R + r]);
      }
    };
#pragma GCC unroll 2
    for (; c + w <= d; c += w)
      chunk([](const T* x) __attribute__((always_inline)) { return V::load(x); });
    if (c < d) chunk([rest = d - c](const T* x) { return V::load_partial(x, rest); });
    const V x = transpose_sum(part) * V::broadcast(scale);
    best = max(best, x);  // the repeated key n - 1 is one of the tile's
    alignas(buffer_alignment) T lane[w];
    x.store(lane);
    const std::size_t stored = std::min(keys, n - j);
#pragma GCC unroll 16
    for (std::size_t u = 0; u < keys; ++u) {
      if (u >= stored) break;
      std::memcpy(st + (j + u) * tile, lane + u * R, R * sizeof(T));
    }
  }
  alignas(buffer_alignment) T lane[w];
  best.store(lane);
  for (std::size_t r = 0; r < R; ++r) {
    T m = lane[r];
    for (std::size_t u = 1; u < keys; ++u) m = std::max(m, lane[u * R + r]);
    top[r] = m;
  }
}

/// Scores of a tile with few rows, as dot products along d: st[j][r] = scale · q[r]·k_j for
/// r < rows, j < n, and top[r] = max_j (q[r] points at query row r, read in place). Rows are
/// taken four at a time (then two, one): each vector of K loaded once for them all, each of Q
/// once for a block of keys (score_dot_rows); with `stream`, the first rows' pass fetches K
/// and V ahead as it goes (value_tile fetches V again further on). Lanes from rows up to the
/// next whole register are set to 0 (the softmax runs over whole registers).
template <class T>
void score_dots(std::size_t rows, const T* const* q, T scale, std::size_t d_k, std::size_t n,
                const T* k, std::size_t k_row, T* st, T* top,
                const key_stream* stream = nullptr) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  constexpr std::size_t most = std::min<std::size_t>(4, w);
  const std::size_t lanes = flash_blocking<T>::padded(rows);
  for (std::size_t j = 0; j < n; ++j) V::zero().store(st + j * tile + lanes - w);
  const auto of_width = [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
    for (std::size_t r = 0, taken = 0; r < rows; r += taken) {
      taken = rows - r >= most ? most : rows - r >= 2 ? 2 : 1;
      const key_stream* fetch = r == 0 ? stream : nullptr;
      if (taken == most)
        score_dot_rows<T, D, most>(q + r, scale, d_k, n, k, k_row, st + r, top + r, fetch);
      else if (taken == 2)
        score_dot_rows<T, D, 2>(q + r, scale, d_k, n, k, k_row, st + r, top + r, fetch);
      else
        score_dot_rows<T, D, 1>(q + r, scale, d_k, n, k, k_row, st + r, top + r, fetch);
    }
  };
  with_fixed_width(d_k, of_width);
  std::fill(top + rows, top + lanes, -std::numeric_limits<T>::infinity());
}

// ---------------------------------------------------------------------------------------
// Online softmax on a score tile.

/// Weights may pass 1 by this much before the running maximum is raised (lazy rescaling):
/// a column's m moves only when the tile's maximum exceeds it by more than ln 2^8, so its
/// weights stay below 2^8 and l below 2^8 · seq_kv, and on most tiles no maximum moves and
/// the accumulator is not rescaled at all (FlashAttention-4's conditional rescaling). The
/// result is the same softmax: P, l and the accumulator share whatever m the column holds.
template <class T>
inline constexpr T rescale_slack = T(8) * std::numbers::ln2_v<T>;

/// Column maxima up to this magnitude fold the subtraction of m into an FMA (softmax_step):
/// m · log2 e < 2^12 then rounds by at most 2^-13, so a column whose tiles did not all fold
/// (a maximum crossing the bound; the decision is per register of columns) mixes weights
/// whose scales differ by less than the logits' own rounding there (ulp(2048) = 2^-12).
/// Larger logits, rare in attention, take the unfolded form, exact at any magnitude.
template <class T>
inline constexpr T fold_bound = T(2048);

/// Whether softmax_step may take e^(s - m) as 2^(s · log2 e - m · log2 e), the subtraction
/// folded into one FMA with m · log2 e formed once per column: where fma() rounds once and
/// every column maximum of the register lies within ±fold_bound.
template <class T>
[[gnu::always_inline]] inline bool fold_log2e(simd<T> m) noexcept {
  if constexpr (!fma_is_fused) {
    (void)m;
    return false;
  } else {
    using V = simd<T>;
    const V bound = V::broadcast(fold_bound<T>);
    return !V::any((m.v > bound.v) | (m.v < -bound.v));
  }
}

/// P = 2^x over n keys of one register of columns (keys at the stride of a tile row), x the
/// exponent each key's score s gives: Fold, x = s · log2 e - m2 in one FMA (m2 = m · log2 e,
/// rounded once for the column, the same for every key and every tile); else x = (s - m) ·
/// log2 e. Four exponentials in flight. Returns the sum of the weights.
template <bool Fold, class T>
[[gnu::always_inline]] inline simd<T> exponentiate_column(T* st, std::size_t n, simd<T> m,
                                                          simd<T> m2) noexcept {
  using V = simd<T>;
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const V log2e = V::broadcast(std::numbers::log2e_v<T>), minus_m2 = V::zero() - m2;
  const auto exponent = [&](V s) __attribute__((always_inline)) {
    if constexpr (Fold)
      return fma(s, log2e, minus_m2);
    else
      return (s - m) * log2e;
  };
  V sum = V::zero();
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    V e[4];
#pragma GCC unroll 4
    for (std::size_t u = 0; u < 4; ++u) e[u] = exponent(V::load(st + (j + u) * tile));
    exp2_nonpositive(e);
#pragma GCC unroll 4
    for (std::size_t u = 0; u < 4; ++u) {
      e[u].store(st + (j + u) * tile);
      sum += e[u];
    }
  }
  for (; j < n; ++j) {
    const V e = exp2_nonpositive(exponent(V::load(st + j * tile)));
    e.store(st + j * tile);
    sum += e;
  }
  return sum;
}

/// One step of the online softmax for the first `lanes` columns of the score tile st (n
/// keys) whose column maxima are top: where top > m + rescale_slack, m = top and alpha =
/// e^(m_old - m), elsewhere m stays and alpha = 1; st becomes P = e^(st - m); l = alpha · l
/// + Σ_j P. Returns whether some column's m moved, i.e. whether the caller's accumulator
/// needs the rescale by alpha (false: every alpha is 1, or 0 on a column still at m = -inf,
/// whose accumulator holds 0 or NaN either way). A column whose keys have all been masked so
/// far has m = -inf and is measured against 0 instead, so its P is exactly 0, never NaN.
///
/// e^(s - m) is taken as 2^x with exp2_nonpositive (FlashAttention's exp2), four keys'
/// registers at a time, no Cody-Waite split. Where fma() rounds once, x = s · log2 e - m2 in
/// one FMA, m2 = m · log2 e rounded once per column (FlashAttention-2's scale_apply_exp2):
/// exact but for x's own rounding and m2's, which scales every weight of the column by the
/// same factor (every tile's, alpha being 2^(m2_old - m2)) and so cancels in P / l; lse = m +
/// ln l then carries it, about an ulp of m, as lse's own rounding. Elsewhere, and for a
/// column maximum beyond ±fold_bound, x = (s - m) · log2 e: a subtraction and a product.
/// Equal logits give equal weights either way.
template <class T>
bool softmax_step(std::size_t lanes, T* st, std::size_t n, const T* top, T* m, T* l,
                  T* alpha) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  const V minus_inf = V::broadcast(-std::numeric_limits<T>::infinity());
  const V log2e = V::broadcast(std::numbers::log2e_v<T>);
  const V slack = V::broadcast(rescale_slack<T>);
  typename V::mask_type moved{};
  for (std::size_t v = 0; v < lanes; v += w) {
    const V m_old = V::load(m + v), tile_max = V::load(top + v);
    // -inf + slack is -inf, so a column's first finite maximum always moves it; a NaN
    // maximum never does (its P is NaN through the exponential).
    const auto grows = tile_max.v > (m_old + slack).v;
    moved |= grows;
    const V m_new = select(grows, tile_max, m_old);
    const V m_use = select(m_new.v == minus_inf.v, V::zero(), m_new);
    V a, sum;
    // m_use >= m_old, or m_old = -inf (a = 0 either way): m_old · log2 e is finite or -inf.
    if (fold_log2e(m_use)) {
      const V m2 = m_use * log2e;
      a = exp2_nonpositive(m_old * log2e - m2);  // m_old · log2 e: the earlier tiles' m2
      sum = exponentiate_column<true>(st + v, n, m_use, m2);
    } else {
      a = exp2_nonpositive((m_old - m_use) * log2e);
      sum = exponentiate_column<false>(st + v, n, m_use, m_use);
    }
    // Where m stays, exactly 1: the accumulator is rescaled only where some m moved, and
    // m_old · log2 e - m2 may be contracted into an FMA that leaves m2's rounding (2^that
    // is 1 + an ulp or so), which would scale l and not the accumulator on every such tile.
    a = select(grows, a, V::broadcast(T(1)));
    m_new.store(m + v);
    a.store(alpha + v);
    fma(V::load(l + v), a, sum).store(l + v);
  }
  return V::any(moved);
}

/// top[r] = max_j st[j][r] over the n keys of a score tile, r < lanes (after masking).
template <class T>
void tile_maximum(const T* st, std::size_t n, std::size_t lanes, T* top) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  for (std::size_t v = 0; v < lanes; v += w) {
    V m[4];  // four chains to hide the latency of max
    for (V& x : m) x = V::broadcast(-std::numeric_limits<T>::infinity());
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4)
      for (std::size_t u = 0; u < 4; ++u) m[u] = max(m[u], V::load(st + (j + u) * tile + v));
    for (; j < n; ++j) m[0] = max(m[0], V::load(st + j * tile + v));
    max(max(m[0], m[1]), max(m[2], m[3])).store(top + v);
  }
}

// ---------------------------------------------------------------------------------------
// Values: acc = alpha · acc + P · V.

/// What a value pass fetches as it goes (a decode item's few rows, value_tile): with `stream`,
/// the lines of the pass's columns, which start at byte b0 of a V row, `ahead` keys on.
struct value_fetch {
  const key_stream* stream = nullptr;
  std::size_t ahead = 0, b0 = 0;
};

/// acc[r][c] = alpha[r] · acc[r][c] + Σ_j p[j][r] · v[j][c] for r < Rows, c < CV · width;
/// p has rows of q_tile, acc rows of acc_row. With fetch.stream, each key's step fetches the
/// block's columns of the V row fetch.ahead keys on (value_fetch, key_stream::fetch_values).
template <class T, std::size_t Rows, std::size_t CV>
inline void value_block(std::size_t n, const T* p, const T* v, std::size_t v_row, const T* alpha,
                        T* acc, std::size_t acc_row, value_fetch fetch = {}) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  const auto fetch_row = [&](std::size_t j) __attribute__((always_inline)) {
    if (fetch.stream != nullptr)
      fetch.stream->fetch_values(j + fetch.ahead, fetch.b0, fetch.b0 + CV * w * sizeof(T));
  };
  V o[Rows][CV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < Rows; ++r) {
    const V a = V::broadcast(alpha[r]);
#pragma GCC unroll 8
    for (std::size_t c = 0; c < CV; ++c) o[r][c] = V::load(acc + r * acc_row + c * w) * a;
  }
  std::size_t j = 0;
  if constexpr (Rows * CV <= 8) {
    // Too few accumulators to cover the FMA latency: a second set takes the odd keys.
    V o2[Rows][CV];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
#pragma GCC unroll 8
      for (std::size_t c = 0; c < CV; ++c) o2[r][c] = V::zero();
    for (; j + 2 <= n; j += 2) {
      fetch_row(j), fetch_row(j + 1);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < Rows; ++r) {
        const V p0 = V::broadcast(p[j * tile + r]), p1 = V::broadcast(p[(j + 1) * tile + r]);
#pragma GCC unroll 8
        for (std::size_t c = 0; c < CV; ++c) {
          o[r][c] = fma(p0, V::load(v + j * v_row + c * w), o[r][c]);
          o2[r][c] = fma(p1, V::load(v + (j + 1) * v_row + c * w), o2[r][c]);
        }
      }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
#pragma GCC unroll 8
      for (std::size_t c = 0; c < CV; ++c) o[r][c] += o2[r][c];
  }
  for (; j < n; ++j) {
    fetch_row(j);
    V vj[CV];
#pragma GCC unroll 8
    for (std::size_t c = 0; c < CV; ++c) vj[c] = V::load(v + j * v_row + c * w);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r) {
      const V pr = V::broadcast(p[j * tile + r]);
#pragma GCC unroll 8
      for (std::size_t c = 0; c < CV; ++c) o[r][c] = fma(pr, vj[c], o[r][c]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < Rows; ++r)
#pragma GCC unroll 8
    for (std::size_t c = 0; c < CV; ++c) o[r][c].store(acc + r * acc_row + c * w);
}

/// value_block with cvs <= CV registers of columns and rows <= Rows rows (edge blocks).
template <class T, std::size_t Rows, std::size_t CV = flash_blocking<T>::col_vectors>
inline void value_columns(std::size_t cvs, std::size_t n, const T* p, const T* v, std::size_t v_row,
                          const T* alpha, T* acc, std::size_t acc_row, value_fetch fetch) noexcept {
  if constexpr (CV > 1) {
    if (cvs < CV)
      return value_columns<T, Rows, CV - 1>(cvs, n, p, v, v_row, alpha, acc, acc_row, fetch);
  }
  value_block<T, Rows, CV>(n, p, v, v_row, alpha, acc, acc_row, fetch);
}

template <class T, std::size_t Rows = flash_blocking<T>::row_block>
inline void value_rows(std::size_t rows, std::size_t cvs, std::size_t n, const T* p, const T* v,
                       std::size_t v_row, const T* alpha, T* acc, std::size_t acc_row,
                       value_fetch fetch) noexcept {
  if constexpr (Rows > 1) {
    if (rows < Rows)
      return value_rows<T, Rows - 1>(rows, cvs, n, p, v, v_row, alpha, acc, acc_row, fetch);
  }
  value_columns<T, Rows>(cvs, n, p, v, v_row, alpha, acc, acc_row, fetch);
}

/// acc (rows, DVP) = alpha · acc + P · V for the n keys of a tile, P = S^T (n, Q_TILE) after
/// softmax_step, V rows of v_row elements, DVP (dvp) a whole number of registers. With `stream`,
/// every block of rows fetches V value_fetch_ahead_keys(rows) ahead as it reads it (value_block,
/// key_stream::fetch_values): the second block's requests for the lines the first asked for were
/// not wasted where a tile has more than row_block rows (Zen 4, 64 heads over 8 K/V heads, 8 rows
/// in blocks of 6 and 2, from memory, in a trial where the scores fetched no V: 1.12-1.17x faster
/// on 1 thread than with the first block alone, 1.01-1.06x on 2).
template <class T>
inline void value_tile(std::size_t rows, std::size_t dvp, std::size_t n, const T* p, const T* v,
                       std::size_t v_row, const T* alpha, T* acc,
                       const key_stream* stream = nullptr) noexcept {
  using blocking = flash_blocking<T>;
  constexpr std::size_t w = blocking::width, rb = blocking::row_block,
                        cb = blocking::col_vectors * w;
  const std::size_t ahead = value_fetch_ahead_keys(rows);
  const auto of_width = [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
    const std::size_t d = D != 0 ? D : dvp;
    for (std::size_t r = 0; r < rows; r += rb) {
      const std::size_t nr = std::min(rb, rows - r);
      for (std::size_t c = 0; c < d; c += cb)
        value_rows<T>(nr, std::min(cb, d - c) / w, n, p + r, v + c, v_row, alpha + r,
                      acc + r * d + c, d, {stream, ahead, c * sizeof(T)});
    }
  };
  with_fixed_width(dvp, of_width);
}

// ---------------------------------------------------------------------------------------
// Values with queries on lanes: O^T = alpha · O^T + V^T · P^T.

/// acc[c][r] = alpha[r] · acc[c][r] + Σ_j v[j][c] · p[j][r] for c < Cols, r < QV · width
/// (alpha null: every alpha[r] is 1, no rescale); p and acc have rows of q_tile, v rows of
/// v_row.
template <class T, std::size_t Cols, std::size_t QV>
inline void lane_value_block(std::size_t n, const T* p, const T* v, std::size_t v_row,
                             const T* alpha, T* acc) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  V o[Cols][QV];
#pragma GCC unroll 16
  for (std::size_t c = 0; c < Cols; ++c)
#pragma GCC unroll 4
    for (std::size_t q = 0; q < QV; ++q) o[c][q] = V::load(acc + c * tile + q * w);
  if (alpha != nullptr) {
    V a[QV];
#pragma GCC unroll 4
    for (std::size_t q = 0; q < QV; ++q) a[q] = V::load(alpha + q * w);
#pragma GCC unroll 16
    for (std::size_t c = 0; c < Cols; ++c)
#pragma GCC unroll 4
      for (std::size_t q = 0; q < QV; ++q) o[c][q] *= a[q];
  }
  broadcast_product<T, Cols, QV, true>(o, n, v, v_row, p);
#pragma GCC unroll 16
  for (std::size_t c = 0; c < Cols; ++c)
#pragma GCC unroll 4
    for (std::size_t q = 0; q < QV; ++q) o[c][q].store(acc + c * tile + q * w);
}

/// The last cols < value_cols columns of O^T.
template <class T, std::size_t QV, std::size_t Cols = flash_blocking<T>::value_cols - 1>
inline void lane_value_tail(std::size_t cols, std::size_t n, const T* p, const T* v,
                            std::size_t v_row, const T* alpha, T* acc) noexcept {
  if constexpr (Cols > 0) {
    if (cols == Cols) return lane_value_block<T, Cols, QV>(n, p, v, v_row, alpha, acc);
    return lane_value_tail<T, QV, Cols - 1>(cols, n, p, v, v_row, alpha, acc);
  } else {
    (void)cols, (void)n, (void)p, (void)v, (void)v_row, (void)alpha, (void)acc;
  }
}

template <class T, std::size_t QV>
inline void lane_value_columns(std::size_t d, std::size_t n, const T* p, const T* v,
                               std::size_t v_row, const T* alpha, T* acc) noexcept {
  constexpr std::size_t cb = flash_blocking<T>::value_cols, tile = flash_blocking<T>::q_tile;
  std::size_t c = 0;
  for (; c + cb <= d; c += cb)
    lane_value_block<T, cb, QV>(n, p, v + c, v_row, alpha, acc + c * tile);
  if (c < d) lane_value_tail<T, QV>(d - c, n, p, v + c, v_row, alpha, acc + c * tile);
}

/// acc^T (D_V, Q_TILE) = alpha · acc^T + V^T · P^T for the n keys of a tile, for the first
/// `lanes` columns (a whole number of registers; the rest are not touched): P^T = S^T
/// (n, Q_TILE) after softmax_step, V rows of v_row elements; alpha null: no rescale (every
/// alpha is 1).
template <class T>
inline void lane_value_tile(std::size_t lanes, std::size_t d_v, std::size_t n, const T* p,
                            const T* v, std::size_t v_row, const T* alpha, T* acc) noexcept {
  using blocking = flash_blocking<T>;
  constexpr std::size_t qv = blocking::q_vectors, w = blocking::width;
  if constexpr (qv >= 4) {
    if (lanes <= qv / 2 * w)  // a half-empty tile (the last one of a sequence)
      return lane_value_columns<T, qv / 2>(d_v, n, p, v, v_row, alpha, acc);
  }
  lane_value_columns<T, qv>(d_v, n, p, v, v_row, alpha, acc);
}

/// lane_value_tile for n keys on the lanes `which` takes (score_lanes); alpha (null: no
/// rescale) for those lanes, indexed as the tile's.
template <class T>
inline void lane_value_lanes(lane_half which, std::size_t d_v, std::size_t n, const T* p,
                             const T* v, std::size_t v_row, const T* alpha, T* acc) noexcept {
  constexpr std::size_t qv = flash_blocking<T>::q_vectors, half = flash_blocking<T>::q_tile / 2;
  if constexpr (splits_lane_halves<T>) {  // else never called (flash_attention.hpp, halves_of)
    if (which == lane_half::every)
      return lane_value_columns<T, qv>(d_v, n, p, v, v_row, alpha, acc);
    const std::size_t at = which == lane_half::upper ? half : 0;
    lane_value_columns<T, qv / 2>(d_v, n, p + at, v, v_row, alpha != nullptr ? alpha + at : nullptr,
                                  acc + at);
  } else {
    (void)which, (void)d_v, (void)n, (void)p, (void)v, (void)v_row, (void)alpha, (void)acc;
  }
}

/// acc^T (D_V, Q_TILE) *= alpha on the first `lanes` lanes (whole registers): the rescale of a tile
/// whose first value call does not take every lane (lane_value_lanes); the same values as
/// lane_value_block's.
template <class T>
inline void rescale_lanes(std::size_t lanes, std::size_t d_v, const T* alpha, T* acc) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  for (std::size_t c = 0; c < d_v; ++c)
    for (std::size_t r = 0; r < lanes; r += w)
      (V::load(acc + c * tile + r) * V::load(alpha + r)).store(acc + c * tile + r);
}

}  // namespace detail
}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
