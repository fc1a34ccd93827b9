// bench/kernel_gemm.cpp -- kernel::gemm_nn / gemm_nt alone, one thread, fp32.
//
// Sizes are those of attention with d_model = 512, d_k = 64:
//   gemm_nn/m:n/n:512/k:512   a projection, X(n x 512) . W(512 x 512), n = 128, 1024, 4096
//   gemm_nt/m:1024/n:1024/k:64  one head's scores, Q(1024 x 64) . K(1024 x 64)^T
//   gemm_nt/m:n/n:512/k:512   the projection sizes again with B transposed (compare to nn)
// and, for reference, the FMA peak itself, one double-precision projection, and Eigen's
// own product at the middle projection size (when Eigen is available).
// Counters:
//   GFLOPS       2 m n k flops per call, as a rate (over the benchmark thread's CPU time).
//   peak_pct     GFLOPS / the measured single-thread FMA peak (argus/bench/peak.hpp), in percent;
//                for double, against half that peak (same FMAs, half the lanes).
//   peak_GFLOPS  the measured peak itself.
// smoke-filter: BM_gemm_nn/m:128/|BM_gemm_nt/m:1024/n:1024/k:64

// GCC 12 reports -Wmaybe-uninitialized (at -O3) and -Wuninitialized (at -Og, the test
// presets) inside <immintrin.h> for Eigen's AVX-512 product and transpose kernels (the
// _mm512_undefined_ps() idiom). The state at the warning's location is what counts, so this
// precedes every include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "argus/bench/peak.hpp"
#include "argus/kernel/gemm.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#if __has_include(<Eigen/Core>)
#include <Eigen/Core>
#define ARGUS_BENCH_HAS_EIGEN 1
#endif

namespace {

double peak_gflops() {
  static const double peak = argus::bench::measure_peak_gflops(1);
  return peak;
}

/// GFLOPS, peak_pct and peak_GFLOPS. For double the peak is half the fp32 one: the same
/// FMA throughput on half as many lanes.
void set_counters(benchmark::State& state, double flops, std::size_t element_bytes = 4) {
  using benchmark::Counter;
  const double peak = peak_gflops() * 4.0 / double(element_bytes);
  state.counters["GFLOPS"] = Counter(flops * 1e-9, Counter::kIsIterationInvariantRate);
  state.counters["peak_pct"] =
      Counter(100.0 * flops * 1e-9 / peak, Counter::kIsIterationInvariantRate);
  state.counters["peak_GFLOPS"] = peak;
}

template <class T>
std::vector<T> random_matrix(std::size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> x(size);
  for (T& v : x) v = T(u(rng));
  return x;
}

/// The peak loop of the instruction set the kernels run (argus/bench/peak.hpp), timed as the
/// gemms are; its label names the set.
void BM_peak_fma(benchmark::State& state) {
  constexpr std::size_t iterations = 1 << 16;
  const argus::bench::detail::fma_peak_loop loop =
      argus::bench::detail::peak_loop_for(argus::kernel::active_isa());
  for (auto _ : state) benchmark::DoNotOptimize(loop.run(iterations));
  set_counters(state, 2.0 * double(loop.chains) * double(loop.float_lanes) * double(iterations));
  state.SetLabel(std::string(argus::kernel::isa_name(loop.instruction_set)) + ", " +
                 std::to_string(loop.float_lanes) + " float lanes");
}
BENCHMARK(BM_peak_fma);

/// C(m x n) = A(m x k) . B, B stored (k x n) for nn and (n x k) for nt.
template <class T, bool Transposed>
void BM_gemm(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  const std::vector<T> a = random_matrix<T>(m * k, 1);  // (m, k)
  const std::vector<T> b = random_matrix<T>(k * n, 2);  // (k, n) or (n, k)
  std::vector<T> c(m * n);                              // (m, n)
  for (auto _ : state) {
    if constexpr (Transposed)
      argus::kernel::gemm_nt<T>(m, n, k, T(1), a.data(), k, b.data(), k, c.data(), n);
    else
      argus::kernel::gemm_nn<T>(m, n, k, T(1), a.data(), k, b.data(), n, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, 2.0 * double(m) * double(n) * double(k), sizeof(T));
}

void BM_gemm_nn(benchmark::State& state) { BM_gemm<float, false>(state); }
void BM_gemm_nt(benchmark::State& state) { BM_gemm<float, true>(state); }
void BM_gemm_nn_double(benchmark::State& state) { BM_gemm<double, false>(state); }

BENCHMARK(BM_gemm_nn)
    ->ArgNames({"m", "n", "k"})
    ->Args({128, 512, 512})
    ->Args({1024, 512, 512})
    ->Args({4096, 512, 512});
BENCHMARK(BM_gemm_nt)
    ->ArgNames({"m", "n", "k"})
    ->Args({1024, 1024, 64})
    ->Args({128, 512, 512})
    ->Args({1024, 512, 512})
    ->Args({4096, 512, 512});
BENCHMARK(BM_gemm_nn_double)->ArgNames({"m", "n", "k"})->Args({1024, 512, 512});

#ifdef ARGUS_BENCH_HAS_EIGEN
/// Eigen's product at the same size and storage order (row-major, one thread).
void BM_eigen_gemm_nn(benchmark::State& state) {
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto m = static_cast<Eigen::Index>(state.range(0));
  const auto n = static_cast<Eigen::Index>(state.range(1));
  const auto k = static_cast<Eigen::Index>(state.range(2));
  const matrix a = matrix::Random(m, k), b = matrix::Random(k, n);
  matrix c(m, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, 2.0 * double(m) * double(n) * double(k));
}
BENCHMARK(BM_eigen_gemm_nn)->ArgNames({"m", "n", "k"})->Args({1024, 512, 512});
#endif

}  // namespace

BENCHMARK_MAIN();
