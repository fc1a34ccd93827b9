// tests/support/fuzz_bytes.hpp -- test support: what the libFuzzer targets of tests/fuzz make of
// their input bytes, and how they stop. No Boost.Test here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace argus::test {

/// The element values fuzz bytes stand for, one byte each, cycled when the input is short.
class byte_source {
 public:
  byte_source(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t next() { return size_ == 0 ? 0 : data_[pos_++ % size_]; }

  template <class T>
  T value() {
    const std::uint8_t b = next();
    switch (b) {
      case 0:
        return std::numeric_limits<T>::quiet_NaN();
      case 1:
        return std::numeric_limits<T>::infinity();
      case 2:
        return -std::numeric_limits<T>::infinity();
      case 3:
        return std::numeric_limits<T>::denorm_min() * T(7);
      case 4:
        return T(1e4);
      case 5:
        return T(-1e4);
      default:
        return T(int(b) - 134) / T(16);  // -8 ... 7.6 in steps of 1/16: ties are common
    }
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
