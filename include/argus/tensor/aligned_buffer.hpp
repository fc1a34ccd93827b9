// argus/tensor/aligned_buffer.hpp -- tensor layer: owning, cache-line-aligned storage.
#pragma once

#include <argus/kernel/simd.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace argus {

/// Tag: leave the elements of a new buffer uninitialised (the caller writes every one).
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
inline constexpr uninitialized_t uninitialized{};

/// n elements of T at an address aligned to kernel::buffer_alignment; value-initialised
/// (zero) unless constructed with `uninitialized`.
template <class T>
class aligned_buffer {
  static_assert(std::is_trivial_v<T>, "argus::aligned_buffer holds trivial element types");

 public:
  aligned_buffer() noexcept = default;
  explicit aligned_buffer(std::size_t n) : aligned_buffer(n, uninitialized) {
    std::uninitialized_value_construct_n(data_.get(), n);
  }
  aligned_buffer(std::size_t n, uninitialized_t) : size_(n) {
    if (n == 0) return;
    data_.reset(static_cast<T*>(
        ::operator new[](n * sizeof(T), std::align_val_t{kernel::buffer_alignment})));
  }
  aligned_buffer(const aligned_buffer& o) : aligned_buffer(o.size_) {
    std::copy_n(o.data(), size_, data());
  }
  /// Leaves o empty: no storage and size 0.
  aligned_buffer(aligned_buffer&& o) noexcept
      : data_(std::move(o.data_)), size_(std::exchange(o.size_, 0)) {}
  aligned_buffer& operator=(const aligned_buffer& o) {
    if (this != &o) *this = aligned_buffer(o);
    return *this;
  }
  aligned_buffer& operator=(aligned_buffer&& o) noexcept {
    data_ = std::move(o.data_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }
  ~aligned_buffer() = default;

  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }

 private:
  struct deleter {
    void operator()(T* p) const noexcept {
      ::operator delete[](p, std::align_val_t{kernel::buffer_alignment});
    }
  };
  std::unique_ptr<T[], deleter> data_;
  std::size_t size_ = 0;
};

}  // namespace argus
