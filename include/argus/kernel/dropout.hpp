// argus/kernel/dropout.hpp -- kernel layer: dropout on the attention weights, from a
// counter-based generator, so that nothing is stored.
//
// The weight P_ij of query i and key j, in query head h of batch item b, is kept iff its
// 16-bit draw is at least the threshold t = round(rate · 2^16):
//     block = philox4x32_10(counter = (j / 8, i, h, b), key = (seed mod 2^32, seed / 2^32))
//     draw  = 16-bit half (j mod 2) of word (j mod 8) / 2 of block (the low half first),
// and a kept weight is multiplied by 2^16 / (2^16 − t) (inverted dropout: the expectation of
// the output is the output without dropout), so O_i = Σ_j P_ij · keep_ij · V_j. A weight is
// dropped with probability t / 2^16: the rate, rounded to a multiple of 2^-16 (a rate under
// 2^-17 drops nothing; rate 1 drops every weight, so outputs and gradients are 0).
//
// The decision depends on (seed, b, h, i, j) alone: the fused and unfused evaluators drop
// the same weights whatever their tiles, work order and thread count, and the backward pass
// recomputes the decisions instead of keeping a mask. Philox4x32-10 (Salmon et al., SC'11)
// is the generator of cuRAND, JAX and PyTorch's CUDA dropout (philox4x32_10 below
// reproduces Random123's known answers); 16 bits per decision, eight decisions per block,
// as FlashAttention-2's dropout, halve the generator's cost against 32 bits, and the block
// is computed for u32_width counters at once in SIMD lanes.
//
// Extents: i, h and b are counter words of 32 bits and j / 8 is one too, so the decisions
// are distinct for seq_q, heads, batch < 2^32 and seq_kv < 2^35 (beyond, they repeat).
#pragma once

#include "argus/kernel/simd.hpp"

#include <array>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

/// Philox4x32 with 10 rounds: the block of counter `ctr` under key `key` (Random123).
constexpr std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> ctr,
                                                     std::array<std::uint32_t, 2> key) noexcept {
  constexpr std::uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = m0 * ctr[0], p1 = m1 * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
    key[0] += w0, key[1] += w1;
  }
  return ctr;
}

namespace detail {

/// (hi, lo) = m · a lane by lane, 32 × 32 -> 64 bits.
inline void mulhilo_lanes(std::uint32_t m, u32_lanes a, u32_lanes& hi, u32_lanes& lo) noexcept {
  const u32_lanes mv = u32_lanes{} + m;
  const u64_lanes even = mul_even_lanes(a, mv);
  const u64_lanes odd =
      mul_even_lanes(reinterpret_cast<u32_lanes>(reinterpret_cast<u64_lanes>(a) >> 32), mv);
  hi = reinterpret_cast<u32_lanes>((even >> 32) | (odd & ~std::uint64_t{0xffffffffu}));
  lo = a * m;
}

/// philox4x32_10 of u32_width counters at once: lane L of c[0..3] is counter L's block.
inline void philox4x32_10_lanes(u32_lanes (&c)[4], std::array<std::uint32_t, 2> key) noexcept {
  for (int round = 0; round < 10; ++round) {
    u32_lanes hi0, lo0, hi1, lo1;
    mulhilo_lanes(0xD2511F53u, c[0], hi0, lo0);
    mulhilo_lanes(0xCD9E8D57u, c[2], hi1, lo1);
    c[0] = hi1 ^ c[1] ^ key[0];
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ key[1];
    c[3] = lo0;
    key[0] += 0x9E3779B9u, key[1] += 0xBB67AE85u;
  }
}

}  // namespace detail

/// The dropout of one attention call: which weights it keeps and by what it scales them.
/// rate 0: inactive. pre: 0 <= rate <= 1 (the API layer checks it and throws).
template <class T>
class attention_dropout {
 public:
  static constexpr std::uint32_t one = 1u << 16;  // the draws are 0 .. one − 1

  attention_dropout(T rate, std::uint64_t seed) noexcept
      : threshold_(threshold_of(rate)),
        keep_(threshold_ == one ? T(0) : T(double(one) / double(one - threshold_))),
        key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)} {
    assert(rate >= T(0) && rate <= T(1));
  }

  /// Whether any weight may be dropped (false for rate 0, and for a rate under 2^-17).
  bool active() const noexcept { return threshold_ != 0; }
  /// The probability that a weight is dropped: the rate rounded to a multiple of 2^-16.
  double drop_probability() const noexcept { return double(threshold_) / double(one); }
  /// The factor of a kept weight, 1 / (1 − drop_probability()) (0 when everything drops).
  T keep_scale() const noexcept { return keep_; }

  /// Whether weight (b, h, i, j) is kept.
  bool keeps(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const noexcept {
    const std::uint32_t word = philox4x32_10(counter(b, h, i, j / 8), key_)[j % 8 / 2];
    return ((j % 2 == 0 ? word : word >> 16) & 0xffffu) >= threshold_;
  }

  /// w[k · stride] *= factor of key j0 + k, k < n, for query i of head h, batch item b:
  /// 0 when dropped, keep_scale() when kept.
  void apply(std::size_t b, std::size_t h, std::size_t i, std::size_t j0, std::size_t n, T* w,
             std::size_t stride) const noexcept {
    for_each_factor(b, h, i, j0, n, [&](std::size_t k, T f) { w[k * stride] *= f; });
  }

  /// f[k] = factor of key j0 + k, k < n (0 or keep_scale()).
  void factors(std::size_t b, std::size_t h, std::size_t i, std::size_t j0, std::size_t n,
               T* f) const noexcept {
    for_each_factor(b, h, i, j0, n, [&](std::size_t k, T x) { f[k] = x; });
  }

  /// A score tile laid out by key (tile[k · ld + r], the fused forward's layout): for rows
  /// r < rows, of query head head[r] and query query[r] in batch item b, and keys j0 + k,
  /// k < n, tile[k · ld + r] *= factor. u32_width rows share one Philox call per eight keys
  /// (their counters in SIMD lanes), so each key's factors come out as one vector of rows.
  void apply_tile(std::size_t b, const std::size_t* head, const std::size_t* query,
                  std::size_t rows, std::size_t j0, std::size_t n, T* tile,
                  std::size_t ld) const noexcept {
    constexpr std::size_t lanes = u32_width;
    const std::uint32_t t = threshold_;
    const T keep = keep_;
    for (std::size_t r0 = 0; r0 < rows; r0 += lanes) {
      const std::size_t m = rows - r0 < lanes ? rows - r0 : lanes;
      u32_lanes query_lanes{}, head_lanes{};
      for (std::size_t l = 0; l < lanes; ++l) {  // lanes past the rows repeat the last one
        const std::size_t r = r0 + (l < m ? l : m - 1);
        query_lanes[l] = static_cast<std::uint32_t>(query[r]);
        head_lanes[l] = static_cast<std::uint32_t>(head[r]);
      }
      for (std::size_t k = 0; k < n;) {
        const std::size_t j = j0 + k, block = j / 8;
        u32_lanes c[4] = {u32_lanes{} + static_cast<std::uint32_t>(block), query_lanes, head_lanes,
                          u32_lanes{} + static_cast<std::uint32_t>(b)};
        detail::philox4x32_10_lanes(c, key_);
        for (std::size_t e = j % 8; e < 8 && k < n; ++e, ++k) {
          const u32_lanes draw = e % 2 == 0 ? (c[e / 2] & 0xffffu) : (c[e / 2] >> 16);
          T* row = tile + k * ld + r0;
          for (std::size_t l = 0; l < m; ++l) row[l] *= draw[l] >= t ? keep : T(0);
        }
      }
    }
  }

 private:
  static std::uint32_t threshold_of(T rate) noexcept {
    if (!(rate > T(0))) return 0;
    if (rate >= T(1)) return one;
    return static_cast<std::uint32_t>(std::lround(double(rate) * double(one)));  // <= one
  }

  static std::array<std::uint32_t, 4> counter(std::size_t b, std::size_t h, std::size_t i,
                                              std::size_t block) noexcept {
    return {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(i),
            static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(b)};
  }

  /// Calls use(k, factor) for k < n: eight keys per Philox block, and where whole blocks
  /// remain, u32_width blocks at a time in SIMD lanes.
  template <class Use>
  void for_each_factor(std::size_t b, std::size_t h, std::size_t i, std::size_t j0, std::size_t n,
                       Use use) const noexcept {
    constexpr std::size_t lanes = u32_width;
    const std::uint32_t t = threshold_;
    const T keep = keep_;  // locals: use() stores through T*, which may alias members
    std::size_t k = 0;
    while (k < n) {
      const std::size_t j = j0 + k, block = j / 8;
      if (j % 8 == 0 && n - k >= 8 * lanes) {
        // The counters' first words are set in an array and copied in whole: filled lane by
        // lane, c[0] is "maybe uninitialized" to GCC 12 at -O3 on the portable path (a
        // baseline build of a dispatching kernel library).
        std::uint32_t blocks[lanes];
        for (std::size_t l = 0; l < lanes; ++l) blocks[l] = static_cast<std::uint32_t>(block + l);
        u32_lanes c[4];
        static_assert(sizeof blocks == sizeof c[0]);
        std::memcpy(&c[0], blocks, sizeof blocks);
        c[1] = u32_lanes{} + static_cast<std::uint32_t>(i);
        c[2] = u32_lanes{} + static_cast<std::uint32_t>(h);
        c[3] = u32_lanes{} + static_cast<std::uint32_t>(b);
        detail::philox4x32_10_lanes(c, key_);
        for (std::size_t l = 0; l < lanes; ++l)
          for (std::size_t word = 0; word < 4; ++word) {
            const std::uint32_t x = c[word][l];
            use(k + 8 * l + 2 * word, (x & 0xffffu) >= t ? keep : T(0));
            use(k + 8 * l + 2 * word + 1, (x >> 16) >= t ? keep : T(0));
          }
        k += 8 * lanes;
        continue;
      }
      const std::array<std::uint32_t, 4> r = philox4x32_10(counter(b, h, i, block), key_);
      for (std::size_t e = j % 8; e < 8 && k < n; ++e, ++k) {
        const std::uint32_t x = e % 2 == 0 ? r[e / 2] & 0xffffu : r[e / 2] >> 16;
        use(k, x >= t ? keep : T(0));
      }
    }
  }

  std::uint32_t threshold_;  // kept iff the 16-bit draw >= threshold_ (one: none kept)
  T keep_;
  std::array<std::uint32_t, 2> key_;
};

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
