// argus/bench/peak.hpp -- benchmarking aid: the measured fp32 FMA peak of this machine.
//
// measure_peak_gflops(threads) runs, on each of `threads` threads, a loop of independent
// simd<float> FMA chains -- enough of them to cover the FMA latency on every FMA pipe --
// for about 0.2 s, and returns the total rate in GFLOP/s (one FMA lane = 2 flops).
// Measured on a Xeon (AVX-512, 2 FMA pipes): ~175 GFLOP/s on one thread; on a Zen 1 EPYC
// (AVX2): ~38. Benchmarks divide their own rate by it to report `peak_pct`
// (argus/bench/register.hpp; bench/). Outside the library's layers, over kernel/simd.hpp
// only; header-only and `inline` so that several benchmark programs can include it.
#pragma once

#include <argus/kernel/simd.hpp>

#include <algorithm>
#include <cstddef>
#include <ctime>
#include <thread>
#include <vector>

namespace argus::bench {

namespace detail {

// Independent accumulator chains: 4-cycle FMA latency x 2 pipes needs 8; 16 leaves margin
// on AVX-512 (32 registers). The 16-register ISAs get 12.
inline constexpr std::size_t peak_chains = kernel::simd_bytes == 64 ? 16 : 12;

/// Runs `iterations` rounds of peak_chains dependent FMAs; returns a value that depends
/// on every chain so that nothing is optimised away.
inline float fma_chains(std::size_t iterations) noexcept {
  using V = kernel::simd<float>;
  V acc[peak_chains];
  for (std::size_t c = 0; c < peak_chains; ++c) acc[c] = V::broadcast(0.01f * float(c));
  // acc <- acc * x + y converges to y / (1 - x): no overflow, no subnormals.
  V x = V::broadcast(0.999999f);
  V y = V::broadcast(1e-7f);
  for (std::size_t i = 0; i < iterations; ++i) {
    // Keep x and y opaque so the chains cannot be strength-reduced.
    asm volatile("" : "+v"(x.v), "+v"(y.v));
#pragma GCC unroll 16
    for (std::size_t c = 0; c < peak_chains; ++c) acc[c] = kernel::fma(acc[c], x, y);
  }
  V s = acc[0];
  for (std::size_t c = 1; c < peak_chains; ++c) s += acc[c];
  return reduce_add(s);  // hidden friend, found by ADL
}

/// CPU time consumed so far by the calling thread, in seconds.
inline double thread_cpu_seconds() noexcept {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace detail

/// Total fp32 FMA throughput of `threads` threads, in GFLOP/s.
///
/// Ten rounds of about 20 ms (0.2 s in all); in each, every thread runs the same FMA chains
/// at once and times them by its own CPU clock, and the round's figure is the sum of the
/// threads' rates. The best round is returned. Timing by thread CPU time, as Google
/// Benchmark does for its rate counters, keeps the figure of a shared machine honest when
/// other processes take turns on the cores; taking the best round drops rounds that lost
/// their caches or clock speed to them.
inline double measure_peak_gflops(int threads = 1) {
  const std::size_t n_threads = static_cast<std::size_t>(std::max(threads, 1));
  constexpr double flops_per_iteration = 2.0 * detail::peak_chains * kernel::simd<float>::width;
  // Calibrate on one thread: grow the round until it takes >= 5 ms, then scale to 20 ms.
  std::size_t iterations = 1 << 12;
  volatile float sink = 0;
  for (;;) {
    const double t0 = detail::thread_cpu_seconds();
    sink = sink + detail::fma_chains(iterations);
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
    results[t] = detail::fma_chains(iterations);
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
  return best * 1e-9;
}

}  // namespace argus::bench
