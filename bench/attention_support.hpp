// bench/attention_support.hpp -- benchmark support shared by bench/attention_core.cpp and
// bench/attention_mha.cpp: the evaluators and row registration. The counters and the timed
// loop are argus/bench/register.hpp's, which users' own benchmarks get too.
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
//                       measured once per process and thread count (argus/bench/peak.hpp) and is
//                       also printed as the row BM_peak_fma/threads:N.
//   bytes_materialised  argus: explain(expr, policy).materialised_bytes_into_out(); eigen:
//                       the bytes of the matrices the Eigen peer allocates (eigen_attention.hpp);
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

#include "argus/bench/register.hpp"
#include "argus/kernel/parallel.hpp"
#include "eigen_attention.hpp"
#include "peers/peers.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
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

/// BM_peak_fma/threads:N: the peak that peak_pct divides by (GFLOPS), as measured; its label
/// names the instruction set and register width it was measured with, those of the kernels.
inline void peak_fma_row(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(peak_gflops(threads));
  const fma_peak& peak = measured_peak(threads);
  state.counters["GFLOPS"] = peak.gflops;
  state.counters["peak_pct"] = 100.0;
  state.SetLabel(std::string(kernel::isa_name(peak.instruction_set)) + ", " +
                 std::to_string(peak.float_lanes) + " float lanes");
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

/// The common start of a row: begin_row (the high-water mark reset, the thread count set for
/// argus, the peak measured before any timing), and Eigen's own products kept on one thread
/// (see eigen_attention.hpp).
inline void start_row(int threads) {
  begin_row(threads);
  Eigen::setNbThreads(1);
}

/// With ARGUS_BENCH_CHECK=1 in the environment, rows compare their output with another
/// evaluator's and fail (SkipWithError) past a relative difference of 1e-3.
inline bool checking() {
  const char* v = std::getenv("ARGUS_BENCH_CHECK");
  return v != nullptr && v[0] == '1';
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
  if (!call.run) {  // not built in, or its library would not load: the description says which
    state.SkipWithError(call.description.empty()
                            ? "this peer is not built into the program"
                            : ("this peer cannot run: " + call.description).c_str());
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
  timed_loop(state, threads, flops, call.bytes_materialised, call.run, true);  // checked: warm
  state.counters["max_diff"] = worst;
}

// --- the peers as other evaluators of register_module (argus/bench/register.hpp) ----------------

/// The Eigen peer (eigen_attention.hpp) of a module_problem: the weights copied into its
/// matrices when the row is prepared (zero biases for a module without).
inline other_evaluator eigen_evaluator() {
  return {
      "eigen", [](const module_problem& p) {
        auto w = std::make_shared<eigen_peer::mha_weights>(p.d_model, p.heads, p.kv_heads, p.d_k,
                                                           p.d_v, p.d_model, p.d_model);
        const auto load = [](const float* from, auto& to) {
          if (from != nullptr)
            std::copy_n(from, to.size(), to.data());
          else
            to.setZero();
        };
        load(p.w_q, w->w_q), load(p.w_k, w->w_k), load(p.w_v, w->w_v), load(p.w_o, w->w_o);
        load(p.b_q, w->b_q), load(p.b_k, w->b_k), load(p.b_v, w->b_v), load(p.b_o, w->b_o);
        Eigen::setNbThreads(1);  // see eigen_attention.hpp: the peer threads itself
        prepared_call c;
        c.run = [w, p] {
          eigen_peer::forward(*w, p.batch, p.seq, p.seq, p.x, p.x, p.x, p.out, false, p.threads);
        };
        c.output = [out = p.out] { return static_cast<const float*>(out); };
        c.bytes_materialised = double(eigen_peer::mha_bytes(*w, p.batch, p.seq, p.seq, p.threads));
        return c;
      }};
}

/// The oneDNN and libtorch peers built into this program (peers/peers.hpp), for the default
/// module only (kv_h = h, d_k = d_v = d_model / h, biases): other rows fail with that reason.
/// libtorch gives two rows: torch (the C++ nn::MultiheadAttention module's forward()) and
/// torch_native (its fused inference path, at::_native_multi_head_attention).
inline std::vector<other_evaluator> library_peer_evaluators() {
  using make_call = peers::peer_call (*)(const peers::mha_problem&, int);
  std::vector<std::pair<std::string, make_call>> rows;
  for (evaluator e : peer_evaluators()) {
    if (e == evaluator::onednn) rows.emplace_back(evaluator_name(e), &peers::onednn_mha);
    if (e == evaluator::torch) {
      rows.emplace_back(evaluator_name(e), &peers::torch_mha);
      rows.emplace_back("torch_native", &peers::torch_mha_native);
    }
  }
  std::vector<other_evaluator> out;
  for (const auto& row : rows) {  // not a structured binding: Clang 14 cannot capture one
    out.push_back({row.first, [make = row.second](const module_problem& p) {
                     prepared_call c;
                     if (p.kv_heads != p.heads || p.d_k * p.heads != p.d_model || p.d_v != p.d_k ||
                         p.b_q == nullptr) {
                       c.label =
                           "the library peers run the default module only (kv_h = h, "
                           "d_k = d_v = d_model / h, biases)";
                       return c;
                     }
                     const peers::mha_problem q{p.batch, p.seq, p.seq, p.d_model, p.heads, p.x,
                                                p.x,     p.w_q, p.w_k, p.w_v,     p.w_o,   p.b_q,
                                                p.b_k,   p.b_v, p.b_o, p.out};
                     auto call = std::make_shared<peers::peer_call>(make(q, p.threads));
                     c.label = call->description;
                     if (call->run) {
                       c.run = [call] { call->run(); };
                       c.output = [call] { return call->output(); };
                       c.bytes_materialised = call->bytes_materialised;
                     }
                     return c;
                   }});
  }
  return out;
}

}  // namespace argus::bench
