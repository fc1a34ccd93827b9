// argus/kernel/cpu_caches.hpp -- kernel layer: the size of the L1 data cache of the CPU the
// process runs on (detail::l1d_bytes), for the few choices a kernel makes at run time from
// the cache it finds rather than from the instruction set it was compiled for.
//
// Which cache level a software prefetch should fill is one such choice: the same AVX-512 code
// decodes from memory 1.4x faster on Zen 5 (48 KiB L1d) fetching into L1 and 1.3-1.8x faster
// on Zen 4 (32 KiB L1d) fetching into L2 only (flash_micro_kernels.hpp's key_stream,
// docs/performance.md "Fetching into L1 or L2"). Both run the same instructions; only the
// cache tells them apart. The size comes from glibc's sysconf(_SC_LEVEL1_DCACHE_SIZE), which
// reads CPUID (leaf 4 on Intel, 0x8000001D on AMD): what a virtual machine's CPUID reports,
// as lscpu shows it. Where it is not known (another C library, another OS, a CPUID that
// reports nothing) the answer is 0 and each caller says what it assumes then.
#pragma once

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

}  // namespace argus::detail
