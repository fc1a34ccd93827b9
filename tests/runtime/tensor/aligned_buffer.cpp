// labels: memory
// aligned_buffer: the alignment of small and large buffers, zero initialisation, copies and
// moves (under ASan: every buffer freed with the alignment it was allocated with), the size
// check, and on Linux that a large buffer's memory is eligible for transparent huge pages
// (the madvise that saves the MHA a page fault per 4 KiB of its new tensors).
#include <argus/tensor/aligned_buffer.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

constexpr std::size_t huge = argus::detail::huge_page_bytes;

/// The value of `field` (e.g. "THPeligible:") in /proc/self/smaps for the mapping that
/// holds p; empty when there is no such file, mapping or field.
std::string smaps_field(const void* p, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= address(p) && address(p) < hi;
      continue;
    }
    if (inside && line.rfind(field, 0) == 0) {
      std::istringstream value(line.substr(field.size()));
      std::string v;
      value >> v;
      return v;
    }
  }
  return {};
}

/// The selected mode of /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise",
/// "never"), empty where the file does not exist.
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string word;
  while (f >> word)
    if (word.size() > 2 && word.front() == '[' && word.back() == ']')
      return word.substr(1, word.size() - 2);
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(small_buffers_are_aligned_for_the_kernels_and_zeroed) {
  for (std::size_t n : {1u, 3u, 1000u, 100000u}) {
    const argus::aligned_buffer<float> b(n);
    BOOST_TEST(b.size() == n);
    BOOST_TEST(address(b.data()) % argus::kernel::buffer_alignment == 0u);
    bool zero = true;
    for (std::size_t i = 0; i < n; ++i) zero = zero && b.data()[i] == 0.0f;
    BOOST_TEST(zero);
  }
  const argus::aligned_buffer<double> empty(0);
  BOOST_TEST(empty.size() == 0u);
  BOOST_TEST(empty.data() == nullptr);
}

// Views (and the expressions built on them) of a buffer outlive an assignment to it of the same
// size, as with std::vector: the elements are copied into the storage it has.
BOOST_AUTO_TEST_CASE(copy_assignment_of_the_same_size_keeps_the_storage) {
  for (std::size_t n : {std::size_t{5}, std::size_t{1} << 20}) {  // a small and a huge-page buffer
    argus::aligned_buffer<float> a(n), b(n), c(n + 1);
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = float(i);
    const float* before = a.data();
    a = b;
    BOOST_TEST(a.data() == before);
    BOOST_TEST(a.data() != b.data());
    BOOST_TEST(a.data()[n - 1] == float(n - 1));
    a = c;  // another size: new storage, c's elements
    BOOST_TEST(a.size() == n + 1);
    BOOST_TEST(a.data() != c.data());
    BOOST_TEST(a.data()[n] == 0.0f);
    const argus::aligned_buffer<float>& self = a;
    a = self;
    BOOST_TEST(a.size() == n + 1);
  }
}

BOOST_AUTO_TEST_CASE(large_buffers_start_on_a_huge_page_and_keep_their_contents) {
  // Just below, at and above the threshold, and several pages with a partial last one.
  for (std::size_t bytes : {huge - 64, huge, huge + 4096, 5 * huge + 12345 * 4}) {
    const std::size_t n = bytes / sizeof(float);
    argus::aligned_buffer<float> b(n, argus::uninitialized);
    const std::size_t want = n * sizeof(float) >= huge ? huge : argus::kernel::buffer_alignment;
    BOOST_TEST(address(b.data()) % want == 0u, bytes << " bytes at " << b.data());
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = static_cast<float>(i % 1000);
    const argus::aligned_buffer<float> copy = b;  // a second buffer of the same size
    BOOST_TEST(address(copy.data()) % want == 0u);
    argus::aligned_buffer<float> moved = std::move(b);
    BOOST_TEST(b.size() == 0u);
    BOOST_TEST(b.data() == nullptr);
    bool same = true;
    for (std::size_t i = 0; i < n; ++i)
      same = same && moved.data()[i] == static_cast<float>(i % 1000) &&
             copy.data()[i] == moved.data()[i];
    BOOST_TEST(same);
    argus::aligned_buffer<float> small(16);
    small = std::move(moved);  // the small buffer is freed, the large one changes owner
    BOOST_TEST(small.size() == n);
    moved = argus::aligned_buffer<float>(8);  // and back: each freed with its own alignment
    BOOST_TEST(moved.size() == 8u);
  }
  const argus::aligned_buffer<double> zeroed(3 * huge / sizeof(double));
  bool zero = true;
  for (std::size_t i = 0; i < zeroed.size(); ++i) zero = zero && zeroed.data()[i] == 0.0;
  BOOST_TEST(zero);
}

BOOST_AUTO_TEST_CASE(a_size_past_the_address_space_throws_before_allocating) {
  const std::size_t too_many = std::numeric_limits<std::size_t>::max() / sizeof(double) + 1;
  BOOST_CHECK_THROW(argus::aligned_buffer<double>(too_many, argus::uninitialized),
                    std::bad_array_new_length);
  // Sizes that fit, but would wrap around when rounded up to whole huge pages.
  const std::size_t near_max = (std::numeric_limits<std::size_t>::max() - 1000) / sizeof(double);
  BOOST_CHECK_THROW(argus::aligned_buffer<double>(near_max, argus::uninitialized),
                    std::bad_array_new_length);
  BOOST_CHECK_THROW(argus::aligned_buffer<char>(std::numeric_limits<std::size_t>::max() - 1),
                    std::bad_array_new_length);
}

BOOST_AUTO_TEST_CASE(large_buffers_are_eligible_for_transparent_huge_pages) {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") {
    BOOST_TEST_MESSAGE("transparent huge pages: mode '" << mode << "', nothing to check");
    return;
  }
  argus::aligned_buffer<float> b(4 * huge / sizeof(float), argus::uninitialized);
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = 1.0f;
  const std::string eligible = smaps_field(b.data(), "THPeligible:");
  if (eligible.empty()) {
    BOOST_TEST_MESSAGE("/proc/self/smaps has no THPeligible field here, nothing to check");
    return;
  }
  // Under "madvise" only the madvise makes the mapping eligible.
  BOOST_TEST(eligible == "1", "THPeligible of the buffer's mapping (mode " << mode << ")");
}

BOOST_AUTO_TEST_CASE(freed_large_buffers_are_reused_by_the_next_of_their_size_class) {
  argus::release_cached_buffers();
  auto& cache = *argus::detail::thread_buffer_cache();
  BOOST_TEST(cache.held_bytes() == 0u);
  const std::size_t n = 3 * huge / sizeof(float) - 100;  // rounds up to 3 huge pages
  const float* first = nullptr;
  {
    argus::aligned_buffer<float> b(n, argus::uninitialized);
    first = b.data();
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = 7.0f;  // dirty, for the zeroing below
  }
  BOOST_TEST(cache.held_bytes() == 3 * huge);
  {
    // The same size class (3 huge pages): the same block, zeroed when asked.
    const argus::aligned_buffer<float> again(3 * huge / sizeof(float));
    BOOST_TEST(again.data() == first);
    BOOST_TEST(cache.held_bytes() == 0u);
    bool zero = true;
    for (std::size_t i = 0; i < again.size(); ++i) zero = zero && again.data()[i] == 0.0f;
    BOOST_TEST(zero);
  }
  {
    // Another class: new memory, and the kept block stays kept.
    const argus::aligned_buffer<float> other(2 * huge / sizeof(float), argus::uninitialized);
    BOOST_TEST(other.data() != first);
    BOOST_TEST(cache.held_bytes() == 3 * huge);
  }
  BOOST_TEST(cache.held_bytes() == 5 * huge);
  // Small buffers never go through the cache.
  { const argus::aligned_buffer<float> small(1000); }
  BOOST_TEST(cache.held_bytes() == 5 * huge);
  argus::release_cached_buffers();
  BOOST_TEST(cache.held_bytes() == 0u);
}

// Medium buffers (128 KiB up to a huge page) are kept too, in classes of 64 KiB: glibc's
// malloc gives such sizes back to the system when they are freed, and the next evaluation
// faulted its pages in again (docs/performance.md, "Medium buffers").
BOOST_AUTO_TEST_CASE(freed_medium_buffers_are_reused_by_the_next_of_their_size_class) {
  argus::release_cached_buffers();
  auto& cache = *argus::detail::thread_buffer_cache();
  constexpr std::size_t medium = argus::detail::medium_buffer_bytes;
  constexpr std::size_t step = argus::detail::medium_class_bytes;
  const float* first = nullptr;
  {
    argus::aligned_buffer<float> b((medium + 1000) / sizeof(float), argus::uninitialized);
    first = b.data();
    BOOST_TEST(reinterpret_cast<std::uintptr_t>(first) % argus::kernel::buffer_alignment == 0u);
    for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = 7.0f;
  }
  BOOST_TEST(cache.held_bytes() == medium + step);  // rounded up to its class
  {
    // The same class, value-initialised: the same block, zeroed.
    const argus::aligned_buffer<float> again((medium + step) / sizeof(float));
    BOOST_TEST(again.data() == first);
    BOOST_TEST(cache.held_bytes() == 0u);
    bool zero = true;
    for (std::size_t i = 0; i < again.size(); ++i) zero = zero && again.data()[i] == 0.0f;
    BOOST_TEST(zero);
  }
  {
    // The next class up: new memory.
    const argus::aligned_buffer<char> other(medium + step + 1, argus::uninitialized);
    BOOST_TEST(static_cast<const void*>(other.data()) != static_cast<const void*>(first));
  }
  BOOST_TEST(cache.held_bytes() == 2 * (medium + step) + step);
  // Below medium_buffer_bytes a buffer is freed at once.
  { const argus::aligned_buffer<char> below(medium - 1, argus::uninitialized); }
  BOOST_TEST(cache.held_bytes() == 2 * (medium + step) + step);
  argus::release_cached_buffers();
  BOOST_TEST(cache.held_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(the_cache_holds_at_most_its_slots_and_bytes) {
  argus::release_cached_buffers();
  auto& cache = *argus::detail::thread_buffer_cache();
  constexpr std::size_t slots = argus::detail::buffer_cache::slots;
  {
    std::vector<argus::aligned_buffer<float>> many;
    for (std::size_t i = 0; i < slots + 3; ++i)
      many.emplace_back(huge / sizeof(float), argus::uninitialized);
  }  // slots + 3 blocks of one huge page freed: the last `slots` kept
  BOOST_TEST(cache.held_bytes() == slots * huge);
  constexpr std::size_t cap = argus::detail::buffer_cache_bytes;
  {
    // A block over the whole limit is freed at once, and evicts nothing.
    const argus::aligned_buffer<char> too_big(cap + huge, argus::uninitialized);
  }
  BOOST_TEST(cache.held_bytes() == slots * huge);
  {
    // A block that fits only after evictions pushes the oldest out.
    const argus::aligned_buffer<char> most(cap - huge, argus::uninitialized);
  }
  BOOST_TEST(cache.held_bytes() <= cap);
  BOOST_TEST(cache.held_bytes() == cap);  // cap - huge, plus the newest one-page block
  argus::release_cached_buffers();
  BOOST_TEST(cache.held_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(each_thread_has_its_own_cache) {
  argus::release_cached_buffers();
  const float* here = nullptr;
  {
    const argus::aligned_buffer<float> b(huge / sizeof(float));
    here = b.data();
  }
  const float* there = nullptr;
  std::thread t([&] {
    const argus::aligned_buffer<float> b(huge / sizeof(float));
    there = b.data();
  });  // freed into that thread's cache, which is freed when the thread ends
  t.join();
  BOOST_TEST(there != here);  // the block kept here was not taken there
  BOOST_TEST(argus::detail::thread_buffer_cache()->held_bytes() == huge);
  argus::release_cached_buffers();
}
