// argus/kernel/dropout.hpp -- kernel layer: dropout on the attention weights, from a
// counter-based generator, so that nothing is stored.
//
// The weight P_ij of query i and key j, in query head h of batch item b, is kept iff
//     philox4x32_10(counter = (j / 4, i, h, b), key = (seed mod 2^32, seed / 2^32))[j mod 4]
//         >= threshold,            threshold = ⌊rate · 2^32⌋ (2^32 for rate 1),
// and a kept weight is multiplied by 1 / (1 − rate) (PyTorch's inverted dropout), so that
// O_i = Σ_j P_ij · keep_ij / (1 − rate) · V_j. The decision depends on (seed, b, h, i, j)
// alone: the fused and unfused evaluators drop the same weights whatever their tiles, work
// order and thread count, and the backward pass recomputes the decisions instead of keeping
// a mask. Philox4x32-10 (Salmon et al., SC'11) is the generator of cuRAND, JAX and
// PyTorch's CUDA dropout; philox4x32_10 below reproduces Random123's known answers.
//
// Extents: i, h and b are counter words of 32 bits and j / 4 is one too, so the decisions
// are distinct for seq_q, heads, batch < 2^32 and seq_kv < 2^34 (beyond, they repeat).
// rate 0 drops nothing (the kernels skip the pass: the result is bitwise that of no
// dropout); rate 1 drops every weight (outputs and gradients 0).
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>

namespace argus::kernel {

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

/// The dropout of one attention call: which weights it keeps and by what it scales them.
/// rate 0: inactive. pre: 0 <= rate <= 1 (the API layer checks it and throws).
template <class T>
class attention_dropout {
 public:
  attention_dropout(T rate, std::uint64_t seed) noexcept
      : threshold_(rate >= T(1) ? std::uint64_t{1} << 32
                                : static_cast<std::uint64_t>(double(rate) * 4294967296.0)),
        keep_(rate >= T(1) ? T(0) : T(1) / (T(1) - rate)),
        key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)} {
    assert(rate >= T(0) && rate <= T(1));
  }

  /// Whether any weight may be dropped (rate > 0, or a rate too small to drop any: no).
  bool active() const noexcept { return threshold_ != 0; }
  /// The factor of a kept weight, 1 / (1 − rate) (0 when rate is 1).
  T keep_scale() const noexcept { return keep_; }

  /// Whether weight (b, h, i, j) is kept.
  bool keeps(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const noexcept {
    return philox4x32_10(counter(b, h, i, j / 4), key_)[j % 4] >= threshold_;
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

 private:
  static std::array<std::uint32_t, 4> counter(std::size_t b, std::size_t h, std::size_t i,
                                              std::size_t block) noexcept {
    return {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(i),
            static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(b)};
  }

  /// Calls use(k, factor) for k < n, one Philox block per four keys.
  template <class Use>
  void for_each_factor(std::size_t b, std::size_t h, std::size_t i, std::size_t j0, std::size_t n,
                       Use use) const noexcept {
    std::size_t k = 0;
    while (k < n) {
      const std::size_t j = j0 + k, block = j / 4;
      const std::array<std::uint32_t, 4> r = philox4x32_10(counter(b, h, i, block), key_);
      for (std::size_t lane = j % 4; lane < 4 && k < n; ++lane, ++k)
        use(k, r[lane] >= threshold_ ? keep_ : T(0));
    }
  }

  std::uint64_t threshold_;  // kept iff the 32-bit draw >= threshold_ (2^32: none kept)
  T keep_;
  std::array<std::uint32_t, 2> key_;
};

}  // namespace argus::kernel
