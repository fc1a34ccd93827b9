// tests/support/counting_operator_new.hpp -- a test program's global operator new and
// delete, replaced: every allocation is first reported to argus::test::on_allocation(bytes),
// which the test defines, then made with posix_memalign (freed with free). Include it in
// exactly one translation unit of the program (a replacement is a definition, not an inline
// function).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace argus::test {

/// Called for every allocation the program makes, on the allocating thread, before it is
/// made. Defined by the test that includes this header.
void on_allocation(std::size_t bytes) noexcept;

namespace detail {

inline void* counted_alloc(std::size_t size, std::size_t alignment) noexcept {
  on_allocation(size);
  if (size == 0) size = 1;
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  void* p = nullptr;
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

inline void* counted_alloc_or_throw(std::size_t size, std::size_t alignment) {
  void* p = counted_alloc(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace detail
}  // namespace argus::test

void* operator new(std::size_t n) { return argus::test::detail::counted_alloc_or_throw(n, 0); }
void* operator new[](std::size_t n) { return argus::test::detail::counted_alloc_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return argus::test::detail::counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return argus::test::detail::counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return argus::test::detail::counted_alloc(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return argus::test::detail::counted_alloc(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return argus::test::detail::counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return argus::test::detail::counted_alloc(n, static_cast<std::size_t>(a));
}
// GCC (-Wmismatched-new-delete) sees free() meet a pointer from operator new once both
// are inlined; here they are a matched pair: posix_memalign and free.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
