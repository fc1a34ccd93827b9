// argus/tensor/aligned_buffer.hpp -- tensor layer: owning, cache-line-aligned storage.
#pragma once

#include <argus/kernel/simd.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

/// ARGUS_HUGE_PAGES 0 keeps large buffers on ordinary pages (see detail::huge_page_bytes).
#ifndef ARGUS_HUGE_PAGES
#define ARGUS_HUGE_PAGES 1
#endif
#if ARGUS_HUGE_PAGES && defined(__linux__)
#include <sys/mman.h>
#endif

namespace argus {

namespace detail {

/// Buffers of at least this many bytes start on a boundary of this many bytes, and Linux is
/// asked to back them with transparent huge pages (madvise MADV_HUGEPAGE: it takes effect
/// where /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always", and changes
/// nothing under "never"). A fresh buffer's first write otherwise faults once per 4 KiB page:
/// the full MHA at n 4096 writes 32 MiB of new Q, K, V and attention output per call,
/// 8192 faults, which took 12 % of its time on a KVM guest (docs/performance.md, "Huge
/// pages for large buffers"); with 2 MiB pages, 16. Compiled with ARGUS_HUGE_PAGES 0,
/// every buffer is aligned to kernel::buffer_alignment and nothing is advised.
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// The alignment of a buffer of `bytes` bytes.
constexpr std::size_t buffer_alignment_for(std::size_t bytes) noexcept {
  return ARGUS_HUGE_PAGES && bytes >= huge_page_bytes ? huge_page_bytes : kernel::buffer_alignment;
}

/// Asks for huge pages over the whole 2 MiB pages of [p, p + bytes), p aligned to
/// huge_page_bytes; advice only: a refusal changes nothing but speed.
inline void advise_huge_pages([[maybe_unused]] void* p,
                              [[maybe_unused]] std::size_t bytes) noexcept {
#if ARGUS_HUGE_PAGES && defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= huge_page_bytes)
    static_cast<void>(::madvise(p, bytes / huge_page_bytes * huge_page_bytes, MADV_HUGEPAGE));
#endif
}

}  // namespace detail

/// Tag: leave the elements of a new buffer uninitialised (the caller writes every one).
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
inline constexpr uninitialized_t uninitialized{};

/// n elements of T at an address aligned to kernel::buffer_alignment (buffers of 2 MiB and
/// more: to 2 MiB, on huge pages where Linux allows, see detail::huge_page_bytes);
/// value-initialised (zero) unless constructed with `uninitialized`.
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
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    const std::align_val_t alignment{detail::buffer_alignment_for(bytes)};
    data_ = std::unique_ptr<T[], deleter>(static_cast<T*>(::operator new[](bytes, alignment)),
                                          deleter{alignment});
    detail::advise_huge_pages(data_.get(), bytes);
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
    std::align_val_t alignment{kernel::buffer_alignment};
    void operator()(T* p) const noexcept { ::operator delete[](p, alignment); }
  };
  std::unique_ptr<T[], deleter> data_;
  std::size_t size_ = 0;
};

}  // namespace argus
