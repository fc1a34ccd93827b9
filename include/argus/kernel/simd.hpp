// argus/kernel/simd.hpp -- kernel layer: the one SIMD vocabulary every kernel uses.
//
// simd<T> is a register of simd<T>::width lanes of T (float or double). The width is chosen
// at compile time from the target: AVX-512 (64 bytes), AVX2/FMA (32 bytes), or a portable
// 16-byte fallback written with GCC/Clang vector extensions that compiles on any target.
// Kernels are written once against this interface; nothing else in argus includes
// <immintrin.h>. Everything here but buffer_alignment lives in the inline namespace of the
// target's instruction set (kernel/isa.hpp).
#pragma once

#include "argus/kernel/isa.hpp"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace argus::kernel {

/// Alignment of every owning argus buffer: one cache line, and at least one register of any
/// instruction set (the same in every translation unit, whatever its target).
inline constexpr std::size_t buffer_alignment = 64;

}  // namespace argus::kernel

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

/// Bytes in one SIMD register of the compilation target.
inline constexpr std::size_t simd_bytes = isa_register_bytes(compiled_isa);
/// "avx512", "avx2" or "portable": the instruction set this translation unit's kernel code
/// is compiled for. With a dispatching kernel library the entry points may run another one:
/// active_isa() says which.
inline constexpr const char* simd_isa = isa_name(compiled_isa);
static_assert(simd_bytes <= buffer_alignment);

namespace detail {
template <class T>
struct native_vector;
template <>
struct native_vector<float> {
  using type = float __attribute__((vector_size(simd_bytes)));
  using bits = std::int32_t __attribute__((vector_size(simd_bytes)));
};
template <>
struct native_vector<double> {
  using type = double __attribute__((vector_size(simd_bytes)));
  using bits = std::int64_t __attribute__((vector_size(simd_bytes)));
};
}  // namespace detail

template <class T>
struct simd {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "argus::kernel::simd<T> is defined for float and double");
  static constexpr std::size_t width = simd_bytes / sizeof(T);
  using native = typename detail::native_vector<T>::type;
  using mask_type = typename detail::native_vector<T>::bits;

  native v;

  static simd zero() noexcept { return {native{}}; }
  // x - 0 (not 0 + x): subtracting +0 is an identity the compiler may drop, so this is
  // one vbroadcast (or an embedded {1toN} operand) and keeps -0.0 as -0.0.
  static simd broadcast(T x) noexcept { return {x - native{}}; }
  static simd load(const T* p) noexcept {
    simd r;
    std::memcpy(&r.v, p, sizeof(native));
    return r;
  }
  void store(T* p) const noexcept { std::memcpy(p, &v, sizeof(native)); }

  /// Loads lanes [0, n) from p and sets the others to `fill`; n <= width. Nothing past
  /// p[n - 1] is read. On AVX-512 this is one masked load (the lane loop costs about
  /// twice a whole softmax row of 64 entries).
  static simd load_partial(const T* p, std::size_t n, T fill = T(0)) noexcept {
    simd r = broadcast(fill);
#if defined(__AVX512F__)
    const auto lanes = static_cast<unsigned>((std::uint32_t(1) << n) - 1);
    if constexpr (std::is_same_v<T, float>)
      r.v = (native)_mm512_mask_loadu_ps((__m512)r.v, static_cast<__mmask16>(lanes), p);
    else
      r.v = (native)_mm512_mask_loadu_pd((__m512d)r.v, static_cast<__mmask8>(lanes), p);
#else
    for (std::size_t i = 0; i < n; ++i) r.v[i] = p[i];
#endif
    return r;
  }
  /// Stores lanes [0, n) to p; n <= width. Nothing past p[n - 1] is written.
  void store_partial(T* p, std::size_t n) const noexcept {
#if defined(__AVX512F__)
    const auto lanes = static_cast<unsigned>((std::uint32_t(1) << n) - 1);
    if constexpr (std::is_same_v<T, float>)
      _mm512_mask_storeu_ps(p, static_cast<__mmask16>(lanes), (__m512)v);
    else
      _mm512_mask_storeu_pd(p, static_cast<__mmask8>(lanes), (__m512d)v);
#else
    for (std::size_t i = 0; i < n; ++i) p[i] = v[i];
#endif
  }

  T operator[](std::size_t i) const noexcept { return v[i]; }

  /// Whether any lane of m (a lane-wise comparison of two simd<T>) is set: one test
  /// instruction where the target has one, not a lane-by-lane loop (which GCC 12 compiles to
  /// an extraction and a branch per lane).
  static bool any(mask_type m) noexcept {
#if defined(__AVX512F__)
    if constexpr (simd_bytes == 64) {
      if constexpr (std::is_same_v<T, float>)
        return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
      else
        return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0;
    }
#endif
#if defined(__AVX2__)
    if constexpr (simd_bytes == 32) return _mm256_testz_si256((__m256i)m, (__m256i)m) == 0;
#endif
    bool set = false;
    for (std::size_t u = 0; u < width; ++u) set |= m[u] != 0;
    return set;
  }

  friend simd operator+(simd a, simd b) noexcept { return {a.v + b.v}; }
  friend simd operator-(simd a, simd b) noexcept { return {a.v - b.v}; }
  friend simd operator*(simd a, simd b) noexcept { return {a.v * b.v}; }
  friend simd operator/(simd a, simd b) noexcept { return {a.v / b.v}; }
  simd& operator+=(simd b) noexcept {
    v += b.v;
    return *this;
  }
  simd& operator*=(simd b) noexcept {
    v *= b.v;
    return *this;
  }

  /// max(a, b) lane-wise, as the max instructions: where either is NaN, the result is b.
  friend simd max(simd a, simd b) noexcept { return {a.v > b.v ? a.v : b.v}; }
  /// Lane-wise choice: where m is set, a, else b.
  friend simd select(mask_type m, simd a, simd b) noexcept { return {m ? a.v : b.v}; }

  friend T reduce_add(simd a) noexcept {
    T s = T(0);
    for (std::size_t i = 0; i < width; ++i) s += a.v[i];
    return s;
  }
  friend T reduce_max(simd a) noexcept {
    T m = a.v[0];
    for (std::size_t i = 1; i < width; ++i) m = a.v[i] > m ? a.v[i] : m;
    return m;
  }
};

/// Whether fma() below rounds once (the target has FMA instructions), not twice.
inline constexpr bool fma_is_fused =
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
    true;
#else
    false;
#endif

/// a * b + c, fused (one rounding) where the target has FMA.
template <class T>
inline simd<T> fma(simd<T> a, simd<T> b, simd<T> c) noexcept {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>)
    return {(typename simd<T>::native)_mm512_fmadd_ps((__m512)a.v, (__m512)b.v, (__m512)c.v)};
  else
    return {(typename simd<T>::native)_mm512_fmadd_pd((__m512d)a.v, (__m512d)b.v, (__m512d)c.v)};
#elif defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<T, float>)
    return {(typename simd<T>::native)_mm256_fmadd_ps((__m256)a.v, (__m256)b.v, (__m256)c.v)};
  else
    return {(typename simd<T>::native)_mm256_fmadd_pd((__m256d)a.v, (__m256d)b.v, (__m256d)c.v)};
#else
  return {a.v * b.v + c.v};
#endif
}

#if defined(__AVX512F__)
// AVX-512 only: one instruction each for what exp2_nonpositive (flash_micro_kernels.hpp)
// builds from several elsewhere.

/// x rounded to the nearest integer, ties to even (vrndscaleps): as x + 1.5 · 2^23 - 1.5 · 2^23
/// for |x| < 2^22; ±inf and NaN stay.
[[gnu::always_inline]] inline simd<float> round_to_integer(simd<float> x) noexcept {
  // The masked form with every lane kept: GCC 12's _mm512_roundscale_ps passes an undefined
  // register, which -Og reports as maybe-uninitialized.
  const __m512 v = (__m512)x.v;
  return {(simd<float>::native)_mm512_mask_roundscale_ps(
      v, __mmask16(0xffff), v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}

#if defined(__AVX512DQ__)
/// x - floor(x), in [0, 1] (vreduceps): exact for |x| >= 1 and x >= 0; for -1 < x < 0 it is
/// 1 + x rounded to float (1 itself for x > -2^-25). NaN stays NaN.
[[gnu::always_inline]] inline simd<float> fraction_above_floor(simd<float> x) noexcept {
  // The masked form with every lane kept, as round_to_integer.
  const __m512 v = (__m512)x.v;
  return {(simd<float>::native)_mm512_mask_reduce_ps(v, __mmask16(0xffff), v,
                                                     _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)};
}
#endif

/// p · 2^floor(n), rounded once (vscalefps; n integral or not), in the lanes where x is above
/// `floor` or NaN; +0 in the others (x <= floor, -inf among them).
[[gnu::always_inline]] inline simd<float> scale_by_exp2(simd<float> p, simd<float> n, simd<float> x,
                                                        simd<float> floor) noexcept {
  const __mmask16 keep = _mm512_cmp_ps_mask((__m512)x.v, (__m512)floor.v, _CMP_NLE_UQ);
  return {(simd<float>::native)_mm512_maskz_scalef_ps(keep, (__m512)p.v, (__m512)n.v)};
}
#endif

/// double's e^r = 1 + r · q(r) on |r| <= ln2/2, q of degree 10 the Chebyshev interpolant of
/// (e^r - 1) / r at 11 nodes, computed to 80 digits (its series, no cancellation at r near 0)
/// and rounded to double by tools/exp2_double_fit.py (ctest tools.exp2_double_fit: these are
/// its output); p(0) = 1 exactly. Evaluated as exp() does, against expl over 2e7 arguments in
/// [-746, 710] and [-40, 1] and those next to each multiple of ln2 / 2 from -1080 ln2 to
/// 1025 ln2: worst 0.90 ulp, rms 0.30 (1.19 and 0.32 without FMA; glibc's exp 0.51); degree 12
/// 0.86 (docs/performance.md, "The unfused softmax's exponential in double").
inline constexpr double exp_double_coefficients[] = {2.510520637395701e-08,
                                                     2.7626357241447223e-07,
                                                     2.7557255425746435e-06,
                                                     2.4801504346997686e-05,
                                                     0.00019841269874800493,
                                                     0.0013888888932488599,
                                                     0.008333333333326141,
                                                     0.04166666666657314,
                                                     0.1666666666666667,
                                                     0.5000000000000006,
                                                     1.0,
                                                     1.0};

/// e^x lane-wise, the unfused softmax's exponential (softmax_rows.hpp). Both types reduce
/// x = n ln2 + r, |r| <= ln2/2 (n ln2 subtracted in two parts, Cody-Waite), take e^r from a
/// polynomial and 2^n from n's bits in the exponent field.
///   float: a degree-6 polynomial; max relative error about 2 ulp over the normal range. Lanes
///     below -87.3 (and -inf) give exactly 0 (no subnormals), lanes above 88.7 give +inf.
///   double: a degree-11 polynomial (exp_double_coefficients), within 0.9 ulp of e^x (1.2
///     without FMA) over the whole range, subnormal results included: 2^n is applied as two
///     factors 2^n1 · 2^n2, each a normal number, so that a result below DBL_MIN is rounded once.
///     x above 709.78 (and +inf) gives +inf, below -745.14 (and -inf) +0, NaN NaN. 25 vector
///     operations a register, 15 of them FMAs and 2 products. (Until 2026-12-03 std::exp lane by
///     lane: the softmax in double took 12 times as long as in float.)
template <class T>
inline simd<T> exp(simd<T> x) noexcept {
  using V = simd<T>;
  if constexpr (std::is_same_v<T, float>) {
    using I = typename detail::native_vector<float>::bits;
    const auto underflow = x.v < -87.33654f;
    const auto overflow = x.v > 88.72283f;
    auto xc = x.v;
    xc = xc < -87.33654f ? -87.33654f + V::zero().v : xc;
    xc = xc > 88.72283f ? 88.72283f + V::zero().v : xc;
    // n = round(x / ln2), via the 1.5 * 2^23 trick (round to nearest even).
    const V shifter = V::broadcast(12582912.0f);
    V n = fma(V{xc}, V::broadcast(1.44269504088896341f), shifter) - shifter;
    // r = x - n*ln2 in two steps (Cody-Waite) to keep r exact enough.
    V r = fma(n, V::broadcast(-0.693359375f), V{xc});
    r = fma(n, V::broadcast(2.12194440e-4f), r);
    // e^r ~ 1 + r + r^2 * P(r), Cephes expf coefficients.
    V p = V::broadcast(1.9875691500e-4f);
    p = fma(p, r, V::broadcast(1.3981999507e-3f));
    p = fma(p, r, V::broadcast(8.3334519073e-3f));
    p = fma(p, r, V::broadcast(4.1665795894e-2f));
    p = fma(p, r, V::broadcast(1.6666665459e-1f));
    p = fma(p, r, V::broadcast(5.0000001201e-1f));
    V rr = r * r;
    V e = fma(p, rr, r + V::broadcast(1.0f));
    // Scale by 2^n: add n to the exponent field.
    I ni = __builtin_convertvector(n.v, I);
    I bits;
    std::memcpy(&bits, &e.v, sizeof bits);
    bits += ni << 23;
    std::memcpy(&e.v, &bits, sizeof bits);
    e.v = underflow ? V::zero().v : e.v;
    e.v = overflow ? V::broadcast(std::numeric_limits<float>::infinity()).v : e.v;
    return e;
  } else {
    static_assert(std::is_same_v<T, double>);
    // Clamped to [-746, 709.79] (NaN stays NaN: max and the min below return x where it is
    // NaN): past either end the result is already +0 or +inf, which the scaling then gives.
    V lowest = V::broadcast(-746.0), highest = V::broadcast(709.79);
#if defined(__x86_64__) || defined(__i386__)
    // Opaque, so that each bound stays one max or min instruction (as in exp2_shifted).
    asm("" : "+v"(lowest.v), "+v"(highest.v));
#endif
    x = max(lowest, x);
    x.v = highest.v < x.v ? highest.v : x.v;
    // t = x log2 e + 1.5 · 2^52 + 1023: n = round(x log2 e) and n + 1023 in t's low bits.
    const V shifter = V::broadcast(6755399441055744.0 + 1023.0);
    const V t = fma(x, V::broadcast(1.4426950408889634), shifter);
    const V n = t - shifter;
    // r = x - n ln2 with ln2's upper part of 32 bits (fdlibm's), so n · ln2_hi is exact.
    V r = fma(n, V::broadcast(-6.93147180369123816490e-01), x);
    r = fma(n, V::broadcast(-1.90821492927058770002e-10), r);
    constexpr const auto& c = exp_double_coefficients;
    V p = fma(V::broadcast(c[0]), r, V::broadcast(c[1]));
    const auto horner = [&]<std::size_t... K>(std::index_sequence<K...>) {  // unrolled
      ((p = fma(p, r, V::broadcast(c[K + 2]))), ...);
    };
    horner(std::make_index_sequence<std::size(c) - 2>{});
    // 2^n = 2^n1 · 2^n2, n1 = round(n / 2) and n2 = n - n1 in [-538, 512] for n in [-1077,
    // 1024]: each factor a normal number made from its bits (n_i + 1023 shifted into the
    // exponent field), p · 2^n1 exact, the product with 2^n2 rounded once.
    const V t1 = fma(n, V::broadcast(0.5), shifter);
    const V t2 = (n - (t1 - shifter)) + shifter;
    using U = std::uint64_t __attribute__((vector_size(simd_bytes)));
    U b1, b2;
    std::memcpy(&b1, &t1.v, sizeof b1);
    std::memcpy(&b2, &t2.v, sizeof b2);
    b1 <<= 52;
    b2 <<= 52;
    V s1, s2;
    std::memcpy(&s1.v, &b1, sizeof b1);
    std::memcpy(&s2.v, &b2, sizeof b2);
    return (p * s1) * s2;
  }
}

/// acc + x · 0 lane-wise over the n elements at x: lanes stay 0 while the elements are
/// finite and become NaN at a NaN or an infinity. One FMA per register.
template <class T>
inline simd<T> accumulate_non_finite(const T* x, std::size_t n, simd<T> acc) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width;
  std::size_t c = 0;
  for (; c + w <= n; c += w) acc = fma(V::load(x + c), V::zero(), acc);
  if (c < n) acc = fma(V::load_partial(x + c, n - c), V::zero(), acc);
  return acc;
}

/// Whether an accumulator of accumulate_non_finite saw only finite elements.
template <class T>
inline bool saw_only_finite(simd<T> acc) noexcept {
  const T sum = reduce_add(acc);
  return sum == sum;
}

/// Whether the n elements at x are all finite (no NaN, no infinity).
template <class T>
inline bool all_finite(const T* x, std::size_t n) noexcept {
  return saw_only_finite(accumulate_non_finite(x, n, simd<T>::zero()));
}

/// Scalar e^x with the same algorithm as the vector version (tails of loops use it so that a
/// row gives the same values whatever its length).
template <class T>
inline T exp_scalar(T x) noexcept {
  return exp(simd<T>::broadcast(x))[0];
}

/// Up to 32 bytes of 32-bit unsigned lanes, and the same bits as 64-bit lanes: the integer
/// vocabulary of counter-based generators (kernel/dropout.hpp). AVX-512 targets use ymm
/// here too (GCC 12 warns on the zmm form of the product).
inline constexpr std::size_t u32_bytes = simd_bytes > 32 ? 32 : simd_bytes;
using u32_lanes = std::uint32_t __attribute__((vector_size(u32_bytes)));
using u64_lanes = std::uint64_t __attribute__((vector_size(u32_bytes)));
inline constexpr std::size_t u32_width = u32_bytes / 4;

/// The full 64-bit products of the even 32-bit lanes of a and b (vpmuludq).
inline u64_lanes mul_even_lanes(u32_lanes a, u32_lanes b) noexcept {
#if defined(__AVX2__)
  return reinterpret_cast<u64_lanes>(
      _mm256_mul_epu32(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
#else
  const u64_lanes low = u64_lanes{} + 0xffffffffu;
  return (reinterpret_cast<u64_lanes>(a) & low) * (reinterpret_cast<u64_lanes>(b) & low);
#endif
}

namespace detail {
// One butterfly step of transpose(): for rows i (bit H clear) and i | H, swap the lanes whose
// bit H differs from the row's bit H, i.e. exchange the off-diagonal H x H blocks of every
// 2H x 2H block. Lane index L < width takes from a, L + width from b.
template <class N, std::size_t H, std::size_t W, std::size_t... L>
[[gnu::always_inline]] inline void transpose_step(N& a, N& b, std::index_sequence<L...>) noexcept {
  const N lo = __builtin_shufflevector(a, b, ((L & H) ? int(W + L - H) : int(L))...);
  const N hi = __builtin_shufflevector(a, b, ((L & H) ? int(W + L) : int(L + H))...);
  a = lo;
  b = hi;
}

// One round of transpose(): the step of distance H on every pair of rows (i, i | H).
template <std::size_t H, class V, std::size_t... I>
[[gnu::always_inline]] inline void transpose_round(V* rows, std::index_sequence<I...>) noexcept {
  constexpr std::size_t w = sizeof...(I);
  (((I & H) == 0 ? transpose_step<typename V::native, H, w>(rows[I].v, rows[I | H].v,
                                                            std::make_index_sequence<w>{})
                 : void()),
   ...);
}

template <class V, std::size_t... S>
[[gnu::always_inline]] inline void transpose_rounds(V* rows, std::index_sequence<S...>) noexcept {
  (transpose_round<(std::size_t(1) << S)>(rows, std::make_index_sequence<V::width>{}), ...);
}

// One step of transpose_sum(): transpose_step's two results on rows a and b, added: the lanes
// whose bit H is clear hold sums of a's lanes, the others of b's.
template <class N, std::size_t H, std::size_t W, std::size_t... L>
[[gnu::always_inline]] inline N transpose_sum_step(N a, N b, std::index_sequence<L...>) noexcept {
  const N lo = __builtin_shufflevector(a, b, ((L & H) ? int(W + L - H) : int(L))...);
  const N hi = __builtin_shufflevector(a, b, ((L & H) ? int(W + L) : int(L + H))...);
  return lo + hi;
}

// One round of transpose_sum(): rows 2k and 2k + 1 into row k, for every k of the round.
template <std::size_t H, class V, std::size_t... K>
[[gnu::always_inline]] inline void transpose_sum_round(V* rows,
                                                       std::index_sequence<K...>) noexcept {
  ((rows[K].v = transpose_sum_step<typename V::native, H, V::width>(
        rows[2 * K].v, rows[2 * K + 1].v, std::make_index_sequence<V::width>{})),
   ...);
}

template <class V, std::size_t... S>
[[gnu::always_inline]] inline void transpose_sum_rounds(V* rows,
                                                        std::index_sequence<S...>) noexcept {
  (transpose_sum_round<(std::size_t(1) << S)>(rows,
                                              std::make_index_sequence<(V::width >> (S + 1))>{}),
   ...);
}
}  // namespace detail

/// The sums of rows[0 .. width): lane i of the result is the sum of the lanes of rows[i] (a
/// transpose whose rows are then added, in width - 1 steps of two shuffles and one addition
/// rather than transpose()'s width / 2 · log2(width) steps and width - 1 additions after it).
/// rows[] is overwritten.
template <class T>
[[gnu::always_inline]] inline simd<T> transpose_sum(simd<T>* rows) noexcept {
  detail::transpose_sum_rounds(rows,
                               std::make_index_sequence<std::bit_width(simd<T>::width) - 1>{});
  return rows[0];
}

/// Transposes the width x width block held in rows[0 .. width): afterwards lane j of rows[i]
/// is what lane i of rows[j] was. log2(width) rounds of two-source shuffles (width/2 pairs
/// each); used to pack row-major data column-wise (the B^T panels of gemm_nt). Inlined
/// whole (no lambdas, every helper always_inline), so that the block stays in registers: out
/// of line, it went through the stack on both sides of the call (docs/performance.md,
/// "Starting and ending a work item").
template <class T>
[[gnu::always_inline]] inline void transpose(simd<T>* rows) noexcept {
  detail::transpose_rounds(rows, std::make_index_sequence<std::bit_width(simd<T>::width) - 1>{});
}

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
