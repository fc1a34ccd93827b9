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

/// Whether a buffer of `bytes` bytes is large: on huge pages, and kept by buffer_cache.
constexpr bool large_buffer(std::size_t bytes) noexcept {
  return ARGUS_HUGE_PAGES && bytes >= huge_page_bytes;
}

/// The alignment of a buffer of `bytes` bytes.
constexpr std::size_t buffer_alignment_for(std::size_t bytes) noexcept {
  return large_buffer(bytes) ? huge_page_bytes : kernel::buffer_alignment;
}

/// Asks for huge pages over the whole 2 MiB pages of [p, p + bytes), p aligned to
/// huge_page_bytes; advice only: a refusal changes nothing but speed.
inline void advise_huge_pages([[maybe_unused]] void* p,
                              [[maybe_unused]] std::size_t bytes) noexcept {
#if ARGUS_HUGE_PAGES && defined(__linux__) && defined(MADV_HUGEPAGE)
  if (large_buffer(bytes))
    static_cast<void>(::madvise(p, bytes / huge_page_bytes * huge_page_bytes, MADV_HUGEPAGE));
#endif
}

/// Freed buffers of at least medium_buffer_bytes are kept, per thread, up to this many bytes
/// in all (ARGUS_BUFFER_CACHE_BYTES; 0 turns the cache off), and a later buffer of the same
/// size class (its bytes rounded up to whole huge pages, or below huge_page_bytes to whole
/// medium_class_bytes) on that thread takes one of them instead of new memory. An evaluation
/// allocates its results and temporaries on the calling thread and frees them before it returns, so
/// from the second call on with the same shapes it maps no new memory: no page faults, no zeroing
/// of fresh pages by the kernel, no mmap and munmap per buffer. (On the Zen 5 KVM guest of
/// docs/performance.md those were about 8 % of the samples of the full MHA at n 1024 on 2 threads;
/// "Huge pages for large buffers". Below 2 MiB glibc's malloc gives such buffers back to the system
/// too: the full MHA at n 512, whose Q, K, V and attention output are 1 MiB each, faulted in 3.7
/// MiB of fresh pages per call and ran at 2.4 times the time per flop of n 1024 there, until medium
/// buffers were kept as well; "Medium buffers".) argus::release_cached_buffers() gives the calling
/// thread's cache back.
#ifndef ARGUS_BUFFER_CACHE_BYTES
#define ARGUS_BUFFER_CACHE_BYTES (std::size_t{256} << 20)
#endif
inline constexpr std::size_t buffer_cache_bytes = ARGUS_BUFFER_CACHE_BYTES;

/// Buffers of at least this many bytes that are not large are medium: kept by buffer_cache
/// too, in size classes of medium_class_bytes (glibc's malloc serves allocations from 128 KiB
/// up with fresh mappings, or trims them from the heap when freed, at first).
inline constexpr std::size_t medium_buffer_bytes = std::size_t{128} << 10;
inline constexpr std::size_t medium_class_bytes = std::size_t{64} << 10;

/// The bytes a buffer of `bytes` bytes allocates: large ones in whole huge pages, medium ones
/// in whole medium_class_bytes, so that one freed block serves any later buffer of its class.
constexpr std::size_t allocation_bytes(std::size_t bytes) noexcept {
  if (large_buffer(bytes)) return (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  if (bytes >= medium_buffer_bytes)
    return (bytes + medium_class_bytes - 1) / medium_class_bytes * medium_class_bytes;
  return bytes;
}

/// One thread's freed medium and large blocks (see buffer_cache_bytes): at most `slots` of
/// them, at most buffer_cache_bytes in all; the oldest goes when a new one does not fit.
/// Sixteen: a training step of a module keeps a dozen buffers alive at once.
class buffer_cache {
 public:
  static constexpr std::size_t slots = 16;

  buffer_cache() = default;
  buffer_cache(const buffer_cache&) = delete;
  buffer_cache& operator=(const buffer_cache&) = delete;
  ~buffer_cache() { release(); }

  /// A kept block of exactly `bytes` bytes, taken out of the cache; nullptr if none.
  void* take(std::size_t bytes) noexcept {
    for (std::size_t i = count_; i-- > 0;)
      if (blocks_[i].bytes == bytes) return remove(i).p;
    return nullptr;
  }
  /// Keeps the block p of `bytes` bytes (allocated with `alignment`), or frees it when it
  /// alone is over the limit.
  void keep(void* p, std::size_t bytes, std::align_val_t alignment) noexcept {
    if (bytes > buffer_cache_bytes) {
      ::operator delete[](p, alignment);
      return;
    }
    while (count_ == slots || held_ + bytes > buffer_cache_bytes) drop_oldest();
    blocks_[count_++] = {p, bytes, alignment};
    held_ += bytes;
  }
  /// Frees every kept block.
  void release() noexcept {
    while (count_ > 0) drop_oldest();
  }
  std::size_t held_bytes() const noexcept { return held_; }

 private:
  struct block {
    void* p;
    std::size_t bytes;
    std::align_val_t alignment;
  };
  /// Takes block i out of the cache (not freed).
  block remove(std::size_t i) noexcept {
    const block b = blocks_[i];
    held_ -= b.bytes;
    for (std::size_t j = i + 1; j < count_; ++j) blocks_[j - 1] = blocks_[j];
    --count_;
    return b;
  }
  void drop_oldest() noexcept {
    const block b = remove(0);
    ::operator delete[](b.p, b.alignment);
  }
  block blocks_[slots] = {};
  std::size_t count_ = 0, held_ = 0;
};

/// Set when the calling thread's cache has been destroyed (thread exit; for the main
/// thread, before objects of static storage): a buffer freed after that, e.g. by such an
/// object, is freed at once. A bool: never destroyed itself.
inline bool& thread_buffer_cache_closed() noexcept {
  thread_local bool closed = false;
  return closed;
}

/// The calling thread's cache, or nullptr once it has been destroyed.
inline buffer_cache* thread_buffer_cache() noexcept {
  if (thread_buffer_cache_closed()) return nullptr;
  struct owner {
    buffer_cache cache;
    owner() = default;
    owner(const owner&) = delete;
    owner(owner&&) = delete;
    owner& operator=(const owner&) = delete;
    owner& operator=(owner&&) = delete;
    ~owner() { thread_buffer_cache_closed() = true; }
  };
  thread_local owner o;
  return &o.cache;
}

/// Whether blocks of this many (allocation) bytes go through the cache: the medium and
/// large ones.
constexpr bool cached_size(std::size_t bytes) noexcept {
  return buffer_cache_bytes > 0 && bytes >= medium_buffer_bytes;
}

}  // namespace detail

/// Frees the buffers the calling thread keeps for reuse (detail::buffer_cache_bytes),
/// e.g. after a long sequence on a thread that will now process short ones.
inline void release_cached_buffers() noexcept {
  if (detail::buffer_cache* c = detail::thread_buffer_cache()) c->release();
}

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
    // Past this, n · sizeof(T) rounded up to whole huge pages would wrap around.
    constexpr std::size_t most =
        (std::numeric_limits<std::size_t>::max() - detail::huge_page_bytes) / sizeof(T);
    if (n > most) throw std::bad_array_new_length();
    const std::size_t bytes = detail::allocation_bytes(n * sizeof(T));
    const std::align_val_t alignment{detail::buffer_alignment_for(bytes)};
    if (detail::cached_size(bytes)) {
      detail::buffer_cache* cache = detail::thread_buffer_cache();
      if (void* p = cache != nullptr ? cache->take(bytes) : nullptr) {
        data_ = std::unique_ptr<T[], deleter>(static_cast<T*>(p), deleter{alignment, bytes});
        return;
      }
    }
    data_ = std::unique_ptr<T[], deleter>(static_cast<T*>(::operator new[](bytes, alignment)),
                                          deleter{alignment, bytes});
    // The whole huge pages of what is asked for: a partial last page stays on small pages,
    // so that a buffer's resident size does not grow by up to 2 MiB.
    detail::advise_huge_pages(data_.get(), n * sizeof(T));
  }
  aligned_buffer(const aligned_buffer& o) : aligned_buffer(o.size_) {
    std::copy_n(o.data(), size_, data());
  }
  /// Leaves o empty: no storage and size 0.
  aligned_buffer(aligned_buffer&& o) noexcept
      : data_(std::move(o.data_)), size_(std::exchange(o.size_, 0)) {}
  /// Into the same storage when the sizes agree (as std::vector): views of this buffer, and
  /// expressions built on them, stay valid. Otherwise into new storage.
  aligned_buffer& operator=(const aligned_buffer& o) {
    if (this == &o) return *this;
    if (size_ == o.size_)
      std::copy_n(o.data(), size_, data());
    else
      *this = aligned_buffer(o);
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
    std::size_t bytes = 0;  // as allocated (detail::allocation_bytes)
    void operator()(T* p) const noexcept {
      detail::buffer_cache* cache =
          detail::cached_size(bytes) ? detail::thread_buffer_cache() : nullptr;
      if (cache != nullptr)
        cache->keep(p, bytes, alignment);
      else
        ::operator delete[](p, alignment);
    }
  };
  std::unique_ptr<T[], deleter> data_;
  std::size_t size_ = 0;
};

}  // namespace argus
