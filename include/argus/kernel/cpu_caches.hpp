// argus/kernel/cpu_caches.hpp -- kernel layer: the size of the L1 data cache of the CPU the
// process runs on (detail::l1d_bytes), for the few choices a kernel makes at run time from
// the cache it finds rather than from the instruction set it was compiled for.
//
// Where data read once (from memory, in a model) should be fetched is such a choice
// (detail::roomy_l1d): into L1 on a core of 48 KiB of L1d or more, into L2 only on a smaller
// one. The same AVX-512 code decodes from memory 1.4x faster on Zen 5 (48 KiB L1d) fetching K
// and V into L1, and 1.2-1.6x faster on Zen 4 (32 KiB L1d) fetching them into L2
// (flash_micro_kernels.hpp's key_stream); a few rows against weights from memory run 1.3-2.1x
// faster on Zen 4 with the kernels that fetch into L2 a call ahead, which on Zen 5 only paid
// from 16 MiB of weights (gemm.hpp's few_rows_read_for, sweeps_b_rows). docs/performance.md,
// "Fetching into L1 or L2". Both cores run the same instructions; only the cache tells them
// apart. The size comes from glibc's sysconf(_SC_LEVEL1_DCACHE_SIZE), which reads CPUID (leaf
// 4 on Intel, 0x8000001D on AMD): what a virtual machine's CPUID reports, as lscpu shows it.
// Where it is not known (another C library, another OS, a CPUID that reports nothing) the size
// is 0.
#pragma once

#include <atomic>
#include <cstddef>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace argus::detail {

/// Bytes of L1 data cache per core as the C library reports it, or 0 where it reports none
/// (or something implausible: under 4 KiB or over 16 MiB). Read once a process.
inline std::size_t l1d_bytes() noexcept {
  static const std::size_t bytes = [] {
#if defined(__linux__) && defined(_SC_LEVEL1_DCACHE_SIZE)
    const long b = ::sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (b >= 4096 && b <= (long{16} << 20)) return static_cast<std::size_t>(b);
#endif
    return std::size_t{0};
  }();
  return bytes;
}

/// The least L1 data cache (bytes per core) that the kernels fetch data read once into: on
/// smaller L1s they fetch it into L2 only (roomy_l1d).
inline constexpr std::size_t roomy_l1d_least_bytes = std::size_t{48} * 1024;

/// Whether a core with `l1d` bytes of L1 data cache takes the kernels' fetches of data read
/// once (K and V of a decode call, the weights of a product of a few rows) into L1 rather than
/// into L2 only. An unknown size (0) counts as small: fetching into L2 cost the 48 KiB core
/// less than fetching into L1 cost the 32 KiB one.
constexpr bool roomy_l1d(std::size_t l1d) noexcept { return l1d >= roomy_l1d_least_bytes; }

/// What roomy_l1d() answers instead of the core's own: -1 (the default) none, 0 false, 1 true.
/// For tests, which run both choices on one machine (roomy_l1d_as); a kernel call reads it once.
inline std::atomic<int>& roomy_l1d_override() noexcept {
  static std::atomic<int> value{-1};
  return value;
}

/// roomy_l1d of the core the process runs on (or roomy_l1d_override's).
inline bool roomy_l1d() noexcept {
  const int forced = roomy_l1d_override().load(std::memory_order_relaxed);
  if (forced >= 0) return forced != 0;
  static const bool roomy = roomy_l1d(l1d_bytes());
  return roomy;
}

/// Makes roomy_l1d() answer `roomy` for the guard's lifetime (tests).
class roomy_l1d_as {
 public:
  explicit roomy_l1d_as(bool roomy) noexcept
      : previous_(roomy_l1d_override().exchange(roomy ? 1 : 0)) {}
  roomy_l1d_as(const roomy_l1d_as&) = delete;
  roomy_l1d_as& operator=(const roomy_l1d_as&) = delete;
  ~roomy_l1d_as() { roomy_l1d_override().store(previous_); }

 private:
  int previous_;
};

}  // namespace argus::detail
