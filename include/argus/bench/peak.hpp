// argus/bench/peak.hpp -- benchmarking aid: the measured fp32 FMA peak of this machine, for
// the instruction set the kernels run.
//
// measure_peak(threads) runs, on each of `threads` threads, a loop of independent FMA chains
// in the registers of kernel::active_isa() -- enough chains to cover the FMA latency on every
// FMA pipe -- for about 0.2 s, and returns the total rate in GFLOP/s (one FMA lane = 2 flops)
// with the set and the width it measured. Measured on a Xeon (AVX-512, 2 FMA pipes): ~175
// GFLOP/s on one thread; on a Zen 1 EPYC (AVX2): ~38. Benchmarks divide their own rate by it to
// report `peak_pct` (argus/bench/register.hpp; bench/).
//
// The loop is compiled once per instruction set, with target attributes, not with the
// program's own flags: a program built without -march that links a dispatching kernel library
// runs AVX2 or AVX-512 kernels, and their share of the SSE peak would overstate it; one built
// with -march=native and run with ARGUS_ISA=portable runs 16-byte kernels without FMA, and
// their share of the AVX2 peak would understate it. Outside the library's layers, over
// kernel/isa.hpp; header-only and `inline` so that several benchmark programs can include it.
#pragma once

#include <argus/kernel/isa.hpp>
#if !defined(__x86_64__)
#include <argus/kernel/simd.hpp>
#endif

#include <algorithm>
#include <cstddef>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace argus::bench {

/// A measured FMA peak, and what it was measured with.
struct fma_peak {
  double gflops = 0;                                    // all threads together
  kernel::isa instruction_set = kernel::isa::portable;  // whose registers and FMA the loop ran
  std::size_t float_lanes = 0;                          // floats per register: 4, 8 or 16
};

namespace detail {

/// One set's peak loop: `run(iterations)` runs `iterations` rounds of `chains` dependent
/// FMAs (or, for the portable set, a multiply and an add) on registers of `float_lanes`
/// floats, and returns a value that depends on every chain so that nothing is optimised away.
struct fma_peak_loop {
  kernel::isa instruction_set;
  std::size_t float_lanes;
  std::size_t chains;
  float (*run)(std::size_t iterations) noexcept;
};

// Independent accumulator chains: 4-cycle FMA latency x 2 pipes needs 8; 16 leaves margin
// on AVX-512 (32 registers). The 16-register sets get 12. Each chain computes
// acc <- acc * x + y, which converges to y / (1 - x): no overflow, no subnormals. x and y
// pass through an empty asm statement every round, so the chains cannot be strength-reduced.

#if defined(__x86_64__)
inline constexpr std::size_t sse_chains = 12;
/// The portable set on x86-64: 16-byte registers, a multiply and an add. A dispatching kernel
/// library compiles its portable kernels without AVX and so without FMA; the empty asm
/// between the two keeps a compiler that may contract them (FMA in the program's target,
/// -ffp-contract=fast) from fusing them here.
inline float fma_chains_sse(std::size_t iterations) noexcept {
  __m128 acc[sse_chains];
  for (std::size_t c = 0; c < sse_chains; ++c) acc[c] = _mm_set1_ps(0.01f * float(c));
  __m128 x = _mm_set1_ps(0.999999f);
  __m128 y = _mm_set1_ps(1e-7f);
  for (std::size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+x"(x), "+x"(y));
#pragma GCC unroll 16
    for (std::size_t c = 0; c < sse_chains; ++c) {
      __m128 p = _mm_mul_ps(acc[c], x);
      asm("" : "+x"(p));
      acc[c] = _mm_add_ps(p, y);
    }
  }
  alignas(16) float lanes[4];
  float s = 0;
  for (std::size_t c = 0; c < sse_chains; ++c) {
    _mm_store_ps(lanes, acc[c]);
    for (const float l : lanes) s += l;
  }
  return s;
}

inline constexpr std::size_t avx2_chains = 12;
/// AVX2 with FMA: 32-byte registers, vfmadd.
__attribute__((target("avx2,fma"))) inline float fma_chains_avx2(std::size_t iterations) noexcept {
  __m256 acc[avx2_chains];
  for (std::size_t c = 0; c < avx2_chains; ++c) acc[c] = _mm256_set1_ps(0.01f * float(c));
  __m256 x = _mm256_set1_ps(0.999999f);
  __m256 y = _mm256_set1_ps(1e-7f);
  for (std::size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+x"(x), "+x"(y));
#pragma GCC unroll 16
    for (std::size_t c = 0; c < avx2_chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], x, y);
  }
  alignas(32) float lanes[8];
  float s = 0;
  for (std::size_t c = 0; c < avx2_chains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (const float l : lanes) s += l;
  }
  return s;
}

inline constexpr std::size_t avx512_chains = 16;
/// AVX-512: 64-byte registers, vfmadd.
__attribute__((target("avx512f"))) inline float fma_chains_avx512(std::size_t iterations) noexcept {
  __m512 acc[avx512_chains];
  for (std::size_t c = 0; c < avx512_chains; ++c) acc[c] = _mm512_set1_ps(0.01f * float(c));
  __m512 x = _mm512_set1_ps(0.999999f);
  __m512 y = _mm512_set1_ps(1e-7f);
  for (std::size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+v"(x), "+v"(y));
#pragma GCC unroll 16
    for (std::size_t c = 0; c < avx512_chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], x, y);
  }
  alignas(64) float lanes[16];
  float s = 0;
  for (std::size_t c = 0; c < avx512_chains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (const float l : lanes) s += l;
  }
  return s;
}
#else
// Elsewhere only the portable set runs, and it is the program's own: kernel/simd.hpp's.
inline constexpr std::size_t simd_chains = 12;
inline float fma_chains_simd(std::size_t iterations) noexcept {
  using V = kernel::simd<float>;
  V acc[simd_chains];
  for (std::size_t c = 0; c < simd_chains; ++c) acc[c] = V::broadcast(0.01f * float(c));
  V x = V::broadcast(0.999999f);
  V y = V::broadcast(1e-7f);
  for (std::size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+m"(x.v), "+m"(y.v));  // a register constraint is per architecture
#pragma GCC unroll 16
    for (std::size_t c = 0; c < simd_chains; ++c) acc[c] = kernel::fma(acc[c], x, y);
  }
  V s = acc[0];
  for (std::size_t c = 1; c < simd_chains; ++c) s += acc[c];
  return reduce_add(s);  // hidden friend, found by ADL
}
#endif

/// The peak loop of `set`. Throws kernel::isa_error when this CPU cannot run the set.
inline fma_peak_loop peak_loop_for(kernel::isa set) {
  if (!kernel::cpu_supports(set))
    throw kernel::isa_error(std::string("argus::bench: cannot measure the ") +
                            kernel::isa_name(set) + " FMA peak: this CPU lacks " +
                            kernel::isa_features(set));
#if defined(__x86_64__)
  switch (set) {
    case kernel::isa::avx2:
      return {set, sizeof(__m256) / sizeof(float), avx2_chains, &fma_chains_avx2};
    case kernel::isa::avx512:
      return {set, sizeof(__m512) / sizeof(float), avx512_chains, &fma_chains_avx512};
    case kernel::isa::portable:
      break;
  }
  return {set, sizeof(__m128) / sizeof(float), sse_chains, &fma_chains_sse};
#else
  return {set, kernel::simd<float>::width, simd_chains, &fma_chains_simd};
#endif
}

/// CPU time consumed so far by the calling thread, in seconds.
inline double thread_cpu_seconds() noexcept {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace detail

/// Total fp32 FMA throughput of `threads` threads on the registers of `set`.
///
/// Ten rounds of about 20 ms (0.2 s in all); in each, every thread runs the same FMA chains
/// at once and times them by its own CPU clock, and the round's figure is the sum of the
/// threads' rates. The best round is returned. Timing by thread CPU time, as Google
/// Benchmark does for its rate counters, keeps the figure of a shared machine honest when
/// other processes take turns on the cores; taking the best round drops rounds that lost
/// their caches or clock speed to them. Throws kernel::isa_error when this CPU cannot run
/// `set`.
inline fma_peak measure_peak(int threads, kernel::isa set) {
  const detail::fma_peak_loop loop = detail::peak_loop_for(set);
  const std::size_t n_threads = static_cast<std::size_t>(std::max(threads, 1));
  const double flops_per_iteration = 2.0 * double(loop.chains) * double(loop.float_lanes);
  // Calibrate on one thread: grow the round until it takes >= 5 ms, then scale to 20 ms.
  std::size_t iterations = 1 << 12;
  volatile float sink = 0;
  for (;;) {
    const double t0 = detail::thread_cpu_seconds();
    sink = sink + loop.run(iterations);
    const double s = detail::thread_cpu_seconds() - t0;
    if (s >= 0.005) {
      iterations = static_cast<std::size_t>(double(iterations) * 0.02 / s);
      break;
    }
    iterations *= 2;
  }
  double best = 0;
  std::vector<double> rate(n_threads);
  std::vector<float> results(n_threads);
  auto run = [&](std::size_t t) {
    const double t0 = detail::thread_cpu_seconds();
    results[t] = loop.run(iterations);
    rate[t] = flops_per_iteration * double(iterations) / (detail::thread_cpu_seconds() - t0);
  };
  for (int round = 0; round < 10; ++round) {
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < n_threads; ++t) pool.emplace_back(run, t);
    run(0);
    for (auto& th : pool) th.join();
    double total = 0;
    for (std::size_t t = 0; t < n_threads; ++t) {
      total += rate[t];
      sink = sink + results[t];
    }
    best = std::max(best, total);
  }
  return {best * 1e-9, loop.instruction_set, loop.float_lanes};
}

/// The FMA peak of `threads` threads for the instruction set the kernels run,
/// kernel::active_isa(): in a program that links a dispatching kernel library, the set it
/// chose at run time, not the one the program is compiled for. Throws kernel::isa_error where
/// ARGUS_ISA cannot be honoured, as the kernels do.
inline fma_peak measure_peak(int threads = 1) {
  return measure_peak(threads, kernel::active_isa());
}

/// measure_peak(threads).gflops: the peak that benchmarks' peak_pct divides by, in GFLOP/s.
inline double measure_peak_gflops(int threads = 1) { return measure_peak(threads).gflops; }

}  // namespace argus::bench
