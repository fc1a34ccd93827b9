// tests/support/fuzz_bytes.hpp -- test support: what the libFuzzer targets of tests/fuzz make of
// their input bytes, and how they stop. No Boost.Test here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace argus::test {

/// The element values fuzz bytes stand for, one byte each, cycled when the input is short.
class byte_source {
 public:
  byte_source(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t next() { return size_ == 0 ? 0 : data_[pos_++ % size_]; }

  /// NaN, +-inf, a denormal, +-1e4, or -8 ... 7.6875 in steps of 1/16 (ties are common).
  /// `exact`: -0 and +-1024 instead of the denormal and +-1e4, values whose products with
  /// multiples of 1/8 up to 2, summed 32 at a time, are exact in float (the gradient
  /// fuzzer's module inputs).
  template <class T>
  T value(bool exact = false) {
    const std::uint8_t b = next();
    switch (b) {
      case 0:
        return std::numeric_limits<T>::quiet_NaN();
      case 1:
        return std::numeric_limits<T>::infinity();
      case 2:
        return -std::numeric_limits<T>::infinity();
      case 3:
        return exact ? T(-0.0) : std::numeric_limits<T>::denorm_min() * T(7);
      case 4:
        return exact ? T(1024) : T(1e4);
      case 5:
        return exact ? T(-1024) : T(-1e4);
      default:
        return T(int(b) - 134) / T(16);
    }
  }

  /// The offset of a causal mask (causal_from) over seq_q queries and seq_kv keys: 0 (top-left)
  /// for half the bytes, else anywhere from -seq_q - 1 (no query sees a key) to seq_kv + 1
  /// (every query sees every key), the bottom-right seq_kv - seq_q among them.
  std::ptrdiff_t causal_offset(std::size_t seq_q, std::size_t seq_kv) {
    const std::uint8_t b = next();
    if (b < 128) return 0;
    return static_cast<std::ptrdiff_t>(std::size_t(b - 128) % (seq_q + seq_kv + 3)) -
           static_cast<std::ptrdiff_t>(seq_q) - 1;
  }

  /// The window of a causal mask (causal_mask::windowed) over seq_kv keys: none for 5 of 8
  /// bytes, else 0 (no key), 1 ... seq_kv + 1.
  std::size_t causal_window(std::size_t seq_kv) {
    const std::uint8_t b = next();
    if (b < 160) return std::numeric_limits<std::size_t>::max();
    return std::size_t(b - 160) % (seq_kv + 2);
  }

  /// A key padding mask of items x cols (row-major at m, nonzero: ignored): random keys, each
  /// ignored for a quarter of its own bytes (half the inputs), or each item's keys past a
  /// length of its own, as a padded batch is (whole tiles of padding the fused loop nests skip).
  template <class B>
  void key_padding(B* m, std::size_t items, std::size_t cols) {
    if (next() < 128) {
      for (std::size_t i = 0; i < items * cols; ++i) m[i] = next() < 64;
      return;
    }
    for (std::size_t b = 0; b < items; ++b) {
      const std::size_t length = std::size_t(next()) * (cols + 1) / 256;
      for (std::size_t j = 0; j < cols; ++j) m[b * cols + j] = j >= length;
    }
  }

  /// A boolean pair mask of rows x cols (row-major at m, true: ignored), in a pattern a byte
  /// picks: random pairs, each ignored for a quarter of its own bytes (half the inputs); packed
  /// documents, pairs across documents ignored (a document starts at each position for a
  /// share of the bytes one byte sets); or every row ignoring the keys past one length. The
  /// last two leave whole blocks of queries that ignore a key, or do not, alike: the fused
  /// loop nest's per-call summary of the mask then skips tiles or runs them unmasked, where
  /// random pairs leave every block partly ignored.
  template <class B>
  void pair_mask(B* m, std::size_t rows, std::size_t cols) {
    const std::uint8_t pattern = next();
    if (pattern < 128) {
      for (std::size_t i = 0; i < rows * cols; ++i) m[i] = next() < 64;
    } else if (pattern < 192) {
      const std::uint8_t starts = next();
      std::vector<std::size_t> doc(rows > cols ? rows : cols);  // the document of a position
      for (std::size_t x = 1; x < doc.size(); ++x) doc[x] = doc[x - 1] + (next() < starts ? 1 : 0);
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) m[i * cols + j] = doc[i] != doc[j];
    } else {
      const std::size_t length = std::size_t(next()) * (cols + 1) / 256;
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) m[i * cols + j] = j >= length;
    }
  }

  /// A module weight on which the projections stay exact with value(true) inputs: -2 ... 2 in
  /// steps of 1/8, or, where `non_finite`, NaN or +-inf for 3 of the 256 bytes.
  template <class T>
  T weight(bool non_finite = false) {
    const std::uint8_t b = next();
    if (non_finite && b < 3)
      return b == 0 ? std::numeric_limits<T>::quiet_NaN()
                    : (b == 1 ? 1 : -1) * std::numeric_limits<T>::infinity();
    return T(int(b % 33) - 16) / T(8);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, pos_ = 0;
};

/// Reports what went wrong and aborts, so that libFuzzer saves the input.
[[noreturn]] inline void fuzz_failure(const char* fuzzer, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", fuzzer, what.c_str());
  std::abort();
}

}  // namespace argus::test
