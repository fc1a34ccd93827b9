// bench/attention_support.hpp -- benchmark support shared by bench/attention_core.cpp and
// bench/attention_mha.cpp: the evaluators, row registration, and the counters.
//
// Evaluators: argus's fused and unfused policies, the Eigen peer (eigen_attention.hpp), and
// where the program was built with them, the oneDNN and libtorch peers (peers/peers.hpp).
// A oneDNN or libtorch row first checks its output once against argus's fused output
// (peer_loop below), so that a wrong peer cannot report a flattering time.
//
// Counters on every row:
//   GFLOPS              flops per call as a rate over real time (Counter::kIsRate, with
//                       kIsIterationInvariant: the flop count of one call times iterations).
//   peak_pct            GFLOPS / the FMA peak of the same thread count, × 100. The peak is
//                       measured once per process and thread count (peak_fma.hpp) and is
//                       also printed as the row BM_peak_fma/threads:N.
//   bytes_materialised  argus: explain(expr, policy).materialised_bytes(); eigen: the bytes
//                       of the matrices the Eigen peer allocates (eigen_attention.hpp);
//                       onednn, torch: see peers/onednn_attention.cpp, torch_attention.cpp.
//   peak_rss_mb         the resident-set high-water mark of the process (VmHWM, which is
//                       what getrusage's ru_maxrss reports), in MiB. It is a per-process
//                       figure; to make it mean something per row, every row first returns
//                       free heap memory (malloc_trim) and resets the mark with
//                       `echo 5 > /proc/self/clear_refs` (Linux >= 4.0), so it is the process
//                       baseline (code, libraries) + this row's inputs and evaluation.
//                       Where the reset is refused it stays the high-water mark since start.
// Time is real (wall-clock) time: UseRealTime() on every row, since threads:2 rows run on
// two threads.
#pragma once

// GCC 12 reports -W(maybe-)uninitialized inside <immintrin.h> for Eigen's AVX-512 product
// kernels (the _mm512_undefined_ps() idiom); the state at the warning's location counts,
// so this precedes every include (as in kernel_gemm.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "argus/kernel/parallel.hpp"
#include "eigen_attention.hpp"
#include "peak_fma.hpp"
#include "peers/peers.hpp"

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace argus::bench {

/// Who evaluates a row: argus's two policies, the Eigen peer, or a library peer.
enum class evaluator { fused, unfused, eigen, onednn, torch };
inline constexpr evaluator all_evaluators[] = {evaluator::fused, evaluator::unfused,
                                               evaluator::eigen};

inline const char* evaluator_name(evaluator e) {
  switch (e) {
    case evaluator::fused:
      return "fused";
    case evaluator::unfused:
      return "unfused";
    case evaluator::eigen:
      return "eigen";
    case evaluator::onednn:
      return "onednn";
    case evaluator::torch:
      return "torch";
  }
  return "?";
}

/// The library peers this program was built with (none, one or both of onednn, torch).
inline std::vector<evaluator> peer_evaluators() {
  std::vector<evaluator> v;
#if ARGUS_BENCH_HAVE_ONEDNN
  v.push_back(evaluator::onednn);
#endif
#if ARGUS_BENCH_HAVE_TORCH
  v.push_back(evaluator::torch);
#endif
  return v;
}

/// Records in the run's context (the console header, and "context" in the JSON) which
/// library peers this program has, and why any other is missing.
inline void add_peer_context() {
  std::string built, missing;
  for (evaluator e : peer_evaluators())
    built += std::string(built.empty() ? "" : " ") + evaluator_name(e);
#if !ARGUS_BENCH_HAVE_ONEDNN
  missing +=
      "onednn: oneDNN not found when bench/ was configured (apt-get install libdnnl-dev, "
      "then configure with -DARGUS_BENCH_PEERS=ON, as the release preset does). ";
#endif
#if !ARGUS_BENCH_HAVE_TORCH
  missing +=
      "torch: libtorch not found when bench/ was configured (apt-get install "
      "libtorch-dev, then configure with -DARGUS_BENCH_PEERS=ON). ";
#endif
  benchmark::AddCustomContext("argus_peers", built.empty() ? "none" : built);
  if (!missing.empty()) benchmark::AddCustomContext("argus_peers_missing", missing);
}

// --- the FMA peak ----------------------------------------------------------------------------

/// The measured peak of `threads` threads, in GFLOP/s; measured once per process.
inline double peak_gflops(int threads) {
  static std::map<int, double> cache;
  auto it = cache.find(threads);
  if (it == cache.end()) it = cache.emplace(threads, measure_peak_gflops(threads)).first;
  return it->second;
}

/// BM_peak_fma/threads:N: the peak that peak_pct divides by (GFLOPS), as measured.
inline void peak_fma_row(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(peak_gflops(threads));
  state.counters["GFLOPS"] = peak_gflops(threads);
  state.counters["peak_pct"] = 100.0;
}

// --- memory ------------------------------------------------------------------------------------

/// A field of /proc/self/status in kB (VmHWM, VmRSS), or -1.
inline long status_kib(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.compare(0, key.size() + 1, key + ":") == 0)
      return std::atol(line.c_str() + key.size() + 1);
  return -1;
}

/// Resets the process's resident high-water mark to the current resident size, after
/// handing the allocator's free memory back to the system (glibc keeps freed blocks below its
/// mmap threshold, up to 32 MiB each, which would otherwise count in every later row).
inline bool reset_rss_high_water() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

/// The resident high-water mark in MiB (VmHWM; ru_maxrss where /proc is missing).
inline double rss_high_water_mib() {
  const long kib = status_kib("VmHWM");
  if (kib >= 0) return double(kib) / 1024.0;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

inline double rss_current_mib() { return double(status_kib("VmRSS")) / 1024.0; }

// --- flops ---------------------------------------------------------------------------------------

/// The attention core: S = Q·Kᵀ and O = P·V, 2 flops per multiply-add, half under causal.
inline double core_flops(std::size_t batch, std::size_t heads, std::size_t seq_q,
                         std::size_t seq_kv, std::size_t d_k, std::size_t d_v, bool causal) {
  return 2.0 * double(batch * heads) * double(seq_q) * double(seq_kv) * double(d_k + d_v) *
         (causal ? 0.5 : 1.0);
}

/// The four projections of the module.
inline double projection_flops(std::size_t batch, std::size_t seq_q, std::size_t seq_kv,
                               std::size_t d_model, std::size_t heads, std::size_t kv_heads,
                               std::size_t d_k, std::size_t d_v, std::size_t kdim,
                               std::size_t vdim) {
  return 2.0 * double(batch) *
         (double(seq_q) * double(d_model * heads * d_k) +
          double(seq_kv) * double(kdim * kv_heads * d_k) +
          double(seq_kv) * double(vdim * kv_heads * d_v) +
          double(seq_q) * double(heads * d_v * d_model));
}

// --- rows ----------------------------------------------------------------------------------------

/// Where a row's extents sit among its arguments, found from the argument names:
/// "n" (seq_q = seq_kv), "n_q", "n_kv" (seq_q = 1 when absent: decode), "threads".
struct row_args {
  int n = -1, n_q = -1, n_kv = -1, threads = -1;

  static row_args from(const std::vector<std::string>& names) {
    row_args a;
    for (int i = 0; i < int(names.size()); ++i) {
      if (names[i] == "n") a.n = i;
      if (names[i] == "n_q") a.n_q = i;
      if (names[i] == "n_kv") a.n_kv = i;
      if (names[i] == "threads") a.threads = i;
    }
    return a;
  }
  std::size_t seq_q(const benchmark::State& s) const {
    return std::size_t(n >= 0 ? s.range(n) : n_q >= 0 ? s.range(n_q) : 1);
  }
  std::size_t seq_kv(const benchmark::State& s) const {
    return std::size_t(s.range(n >= 0 ? n : n_kv));
  }
  bool self_attention() const { return n >= 0; }
  int thread_count(const benchmark::State& s) const { return int(s.range(threads)); }
};

using row_function = void (*)(benchmark::State&, evaluator, const row_args&);

/// Registers `family`/<evaluator> for each evaluator, with one row per argument list.
inline void add_rows(const std::string& family, row_function f,
                     const std::vector<std::string>& names,
                     const std::vector<std::vector<std::int64_t>>& arg_lists,
                     std::vector<evaluator> evaluators = {all_evaluators, all_evaluators + 3}) {
  const row_args a = row_args::from(names);
  for (evaluator e : evaluators) {
    auto* b = benchmark::RegisterBenchmark((family + "/" + evaluator_name(e)).c_str(),
                                           [f, e, a](benchmark::State& s) { f(s, e, a); });
    for (const auto& args : arg_lists) b->Args(args);
    b->ArgNames(names)->UseRealTime()->Unit(benchmark::kMillisecond);
  }
}

/// Registers BM_peak_fma/threads:1 and /threads:2.
inline void add_peak_rows() {
  benchmark::RegisterBenchmark("BM_peak_fma", peak_fma_row)
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->Iterations(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

/// The common start of a row: the high-water mark reset, the thread count set for argus
/// (Eigen's own products stay on one thread: see eigen_attention.hpp), the peak measured
/// before any timing.
inline void start_row(int threads) {
  reset_rss_high_water();
  argus::set_num_threads(std::size_t(threads));
  Eigen::setNbThreads(1);
  (void)peak_gflops(threads);
}

/// Runs call() once to warm the thread pool and the allocator unless a call is long
/// (flops > 4e10, over about 0.2 s), then the timed loop; sets every counter.
template <class F>
void timed_loop(benchmark::State& state, int threads, double flops, double bytes_materialised,
                F&& call) {
  if (flops <= 4e10) call();
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  using benchmark::Counter;
  const double peak = peak_gflops(threads);
  state.counters["GFLOPS"] = Counter(flops * 1e-9, Counter::kIsIterationInvariantRate);
  state.counters["peak_pct"] =
      Counter(100.0 * flops * 1e-9 / peak, Counter::kIsIterationInvariantRate);
  state.counters["bytes_materialised"] =
      Counter(bytes_materialised, Counter::kDefaults, Counter::kIs1024);
  state.counters["peak_rss_mb"] = rss_high_water_mib();
  argus::set_num_threads(0);
}

/// Uniform values in [-scale, scale], fast and reproducible.
inline void fill_random(float* p, std::size_t n, unsigned seed, float scale) {
  std::minstd_rand g(seed);
  const float k = 2.0f * scale / float(std::minstd_rand::max());
  for (std::size_t i = 0; i < n; ++i) p[i] = float(g()) * k - scale;
}

/// With ARGUS_BENCH_CHECK=1 in the environment, rows compare their output with another
/// evaluator's and fail (SkipWithError) past a relative difference of 1e-3.
inline bool checking() {
  const char* v = std::getenv("ARGUS_BENCH_CHECK");
  return v != nullptr && v[0] == '1';
}

/// The largest |a - b| / (1 + |b|) over n values (NaN-aware: a NaN makes it NaN).
inline double worst_difference(const float* a, const float* b, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(double(a[i]) - double(b[i])) / (1.0 + std::abs(double(b[i])));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

inline void check_close(benchmark::State& state, const float* a, const float* b, std::size_t n) {
  const double worst = worst_difference(a, b, n);
  if (!(worst <= 1e-3)) state.SkipWithError(("outputs differ: " + std::to_string(worst)).c_str());
}

/// A oneDNN or libtorch row: the prepared call runs once, its output is compared with argus's
/// fused output `reference` (a tensor, moved in) -- the counter max_diff is the largest
/// |peer - fused| / (1 + |fused|), and past 1e-3 the row fails (SkipWithError) instead of
/// reporting a time -- then `reference` is freed, the resident high-water mark restarts (from
/// the inputs and the peer's own buffers), and the call is timed as every other row. The
/// label says how the peer was set up (library version, threads, BLAS).
template <class Tensor>
void peer_loop(benchmark::State& state, int threads, double flops, peers::peer_call call,
               Tensor reference) {
  if (!call.run) {
    state.SkipWithError("this peer is not built into the program");
    return;
  }
  call.run();
  const double worst = worst_difference(call.output(), reference.data(), reference.size());
  if (!(worst <= 1e-3)) {
    state.SkipWithError(("output differs from argus fused: " + std::to_string(worst)).c_str());
    return;
  }
  { const Tensor released = std::move(reference); }
  reset_rss_high_water();
  state.SetLabel(call.description);
  timed_loop(state, threads, flops, call.bytes_materialised, call.run);
  state.counters["max_diff"] = worst;
}

}  // namespace argus::bench
