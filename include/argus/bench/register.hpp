// argus/bench/register.hpp -- benchmarking aid: Google Benchmark rows for a
// multi_head_attention type you name (fused, unfused, and any other evaluator you hand it),
// with the counters argus's own benchmarks report.
//
// Outside the library's layers: a user of the public API, and the only argus header that
// needs Google Benchmark (<benchmark/benchmark.h>; link benchmark::benchmark, and
// benchmark::benchmark_main or your own BENCHMARK_MAIN()). docs/how-to/benchmark_your_model.md
// shows it in use (examples/benchmark_models.cpp); bench/ registers its BM_mha sweep and the
// shapes of bench/models.cpp through it.
//
//   argus::bench::register_module<argus::multi_head_attention<768, 12>>("bert_base");
//
// registers bert_base/fused/n:<n>/h:12/d_model:768/threads:<t> and bert_base/unfused/...:
// self-attention, forward(x), of a (batch, n, d_model) input with random weights and biases,
// evaluated into an existing tensor, for each n in module_rows::seq and each thread count.
// A grouped-query module adds kv_h:<g> after h, a batch other than 1 adds batch:<b> after
// d_model.
//
// Counters, on every row:
//   GFLOPS              flops of one call over real time: the four projections,
//                       2·B·(n·d_model·h·d_k + n·kdim·kv_h·d_k + n·vdim·kv_h·d_v +
//                       n·h·d_v·d_model), and the core, 4·B·h·n²·d_k (d_k = d_v); softmax, bias and
//                       copies count 0
//   peak_pct            GFLOPS ÷ the FMA peak of the same thread count measured in the same
//                       process, in the registers of the instruction set the kernels run
//                       (argus/bench/peak.hpp), × 100
//   bytes_materialised  argus: explain(y, policy).materialised_bytes_into_out(), the
//                       buffers the plan allocates besides its inputs and the output; another
//                       evaluator: what its prepared_call says
//   peak_rss_mb         the process's resident high-water mark during the row, MiB (the mark
//                       is reset at the start of each row: see reset_rss_high_water)
//   max_diff            other evaluators only: the largest |theirs − fused| / (1 + |fused|) over
//                       the output, checked once before timing; past 1e-3 the row fails
//                       (SkipWithError) instead of reporting a time
// Time is real time (UseRealTime), in milliseconds.
//
// With module_rows::paired, each other evaluator <o> gets family/fused_vs_<o>/... rows instead
// of its own: every iteration times one fused call and one call of <o> back to back (which
// goes first alternates), and the row reports the per-pair ratio <o> ÷ fused: its median
// `ratio` and quartiles `ratio_q1`, `ratio_q3`, the medians `fused_ms` and `other_ms`, and
// `pairs`; GFLOPS and peak_pct are fused's, from fused_ms; the row's time is one pair's;
// max_diff and peak_rss_mb as above. A row whose timed loop ran fewer than
// module_rows::min_pairs pairs (Google Benchmark stops at --benchmark_min_time) runs the rest
// after it, untimed by Google Benchmark but in the statistics. Two rows run minutes apart meet
// different loads on a shared machine; the calls of a pair meet the same, so the spread of the
// ratio is the comparison's, not the machine's drift. On more than one thread each timed call
// follows untimed calls of the same evaluator, for paired_settle (20 ms) and at least one call: a
// library's idle threads poll on for a while after its call (argus's for spin_wait(), 200 us;
// OpenMP's, unless OMP_WAIT_POLICY says otherwise, for its spin count, milliseconds), and without
// them the other library's would sit on the cores through the start of the timed call, or, made to
// block at once, pay a wake-up per parallel region. So each library is timed as in a loop of its
// own calls (its threads polling between its regions), once the other's have settled; the row's
// time is one pair's, these calls included. (One untimed call was not enough where a call is
// shorter than OpenMP's polling: at n 128 on 2 threads argus's call took 1.9 ms paired with oneDNN
// and 1.1 ms with a settle of 5 ms or more.) A runtime that polls longer than paired_settle (LLVM's
// libomp: KMP_BLOCKTIME, 200 ms) needs its polling shortened for these rows. (On the 2 vCPUs of an
// Intel Xeon, argus's workers made to block at once and oneDNN's polling, the AVX2 build's MHA
// at n 1024 took 54 ms a call and oneDNN's 59 ms, both slower than on 1 thread:
// docs/performance.md, "Paired rows on two threads". A library whose threads never stop polling,
// OMP_WAIT_POLICY=active, still takes argus's cores.)
#pragma once

#include <argus/argus.hpp>
#include <argus/bench/peak.hpp>
#include <argus/kernel/parallel.hpp>

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace argus::bench {

// --- counters ------------------------------------------------------------------------------------

/// The measured FMA peak of `threads` threads, for the instruction set the kernels run
/// (measure_peak); measured once per process.
inline const fma_peak& measured_peak(int threads) {
  static std::map<int, fma_peak> cache;
  auto it = cache.find(threads);
  if (it == cache.end()) it = cache.emplace(threads, measure_peak(threads)).first;
  return it->second;
}

/// measured_peak(threads) in GFLOP/s: what peak_pct divides by.
inline double peak_gflops(int threads) { return measured_peak(threads).gflops; }

/// A field of /proc/self/status in kB (VmHWM, VmRSS), or -1.
inline long status_kib(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.compare(0, key.size() + 1, key + ":") == 0)
      return std::atol(line.c_str() + key.size() + 1);
  return -1;
}

/// Resets the process's resident high-water mark to the current resident size
/// (`echo 5 > /proc/self/clear_refs`, Linux >= 4.0), after handing the allocator's free
/// memory back to the system (glibc keeps freed blocks below its mmap threshold, up to
/// 32 MiB each, which would otherwise count in every later row). False where refused: the
/// mark then stays the high-water mark since the process started.
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

/// The flops of Module's forward on batch × seq_q queries and seq_kv keys.
template <class Module>
double module_flops(std::size_t batch, std::size_t seq_q, std::size_t seq_kv, bool causal) {
  using m = Module;
  return projection_flops(batch, seq_q, seq_kv, m::d_model, m::heads, m::kv_heads, m::d_k, m::d_v,
                          m::kdim, m::vdim) +
         core_flops(batch, m::heads, seq_q, seq_kv, m::d_k, m::d_v, causal);
}

/// The start of a row: the high-water mark reset, argus's thread count set, the peak
/// measured (before any timing).
inline void begin_row(int threads) {
  reset_rss_high_water();
  argus::set_num_threads(std::size_t(threads));
  (void)peak_gflops(threads);
}

/// timed_loop's counters and the thread count reset, out of the template: one copy per
/// program, not one per benchmarked call.
inline void set_loop_counters(benchmark::State& state, int threads, double flops,
                              double bytes_materialised) {
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

/// Runs call() once to warm it, unless it `warmed` already (a peer's row, by its check) or a call
/// is very long (flops > 4e11), then the timed loop; sets GFLOPS, peak_pct, bytes_materialised
/// and peak_rss_mb; leaves argus's thread count at its default (docs/performance.md).
template <class F>
void timed_loop(benchmark::State& state, int threads, double flops, double bytes_materialised,
                F&& call, bool warmed = false) {
  if (!warmed && flops <= 4e11) call();
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  set_loop_counters(state, threads, flops, bytes_materialised);
}

/// Uniform values in [-scale, scale], fast and reproducible.
inline void fill_random(float* p, std::size_t n, unsigned seed, float scale) {
  std::minstd_rand g(seed);
  const float k = 2.0F * scale / float(std::minstd_rand::max());
  for (std::size_t i = 0; i < n; ++i) p[i] = float(g()) * k - scale;
}

/// The largest |a - b| / (1 + |b|) over n values (a NaN makes it NaN).
inline double worst_difference(const float* a, const float* b, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(double(a[i]) - double(b[i])) / (1.0 + std::abs(double(b[i])));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

// --- other evaluators ----------------------------------------------------------------------------

/// What another evaluator is given for one row: the module's extents, and pointers to its
/// input, weights and output, row-major, as argus stores them: x (batch, seq, d_model);
/// w_q (d_model, h·d_k), w_k (kdim, kv_h·d_k), w_v (vdim, kv_h·d_v), w_o (h·d_v, d_model),
/// x-times-W; the biases (null when the module has none); out (batch, seq, d_model).
struct module_problem {
  std::size_t batch, seq, d_model, heads, kv_heads, d_k, d_v;
  const float* x;
  const float *w_q, *w_k, *w_v, *w_o;
  const float *b_q, *b_k, *b_v, *b_o;
  float* out;
  int threads;
};

/// One forward of another evaluator, prepared outside the timed loop (its threads set, its
/// buffers allocated). run() is what is timed; output() is where the result lies after it,
/// (batch, seq, d_model) row-major. An empty run means "cannot run this row": `label` says
/// why, and the row fails with that message.
struct prepared_call {
  std::function<void()> run;
  std::function<const float*()> output;
  double bytes_materialised = 0;
  std::string label;  // shown beside the row: how the evaluator was set up
};

/// Another evaluator for the rows of register_module: a library you compare with.
struct other_evaluator {
  std::string name;  // the <evaluator> part of the row names
  std::function<prepared_call(const module_problem&)> prepare;
};

/// register_module and prepacked_evaluator benchmark a module of float: its rows hand float
/// inputs, weights and outputs (module_problem) to every evaluator.
template <class T>
concept benchmarked_module_is_float = std::is_same_v<T, float>;

namespace detail {
/// prepacked_evaluator's work, once Module is accepted.
template <class Module>
other_evaluator prepacked_evaluator_accepted() {
  return {
      "fused_prepacked", [](const module_problem& p) {
        using view =
            tensor_view<const float, shape<argus::batch<>, argus::seq<>, model<Module::d_model>>>;
        struct held {
          prepacked_attention<Module> served;
          view x;
          tensor<float, typename view::shape_type> out;
          decltype(std::declval<const prepacked_attention<Module>&>().forward(
              std::declval<const view&>())) y;
          held(const Module& m, view in)
              : served(m), x(in), out(in.shape()), y(served.forward(x)) {}
          held(const held&) = delete;
          held& operator=(const held&) = delete;
          held(held&&) = delete;
          held& operator=(held&&) = delete;
          ~held() = default;
        };
        Module m;
        const auto load = [](const float* from, auto& to) {
          if (from != nullptr) std::copy_n(from, to.size(), to.data());
        };
        load(p.w_q, m.w_q), load(p.w_k, m.w_k), load(p.w_v, m.w_v), load(p.w_o, m.w_o);
        if constexpr (Module::has_bias)
          load(p.b_q, m.b_q), load(p.b_k, m.b_k), load(p.b_v, m.b_v), load(p.b_o, m.b_o);
        auto h = std::make_shared<held>(m, view(p.x, p.batch, p.seq));
        prepared_call c;
        c.run = [h] { evaluate(h->y, fused, h->out); };  // on the row's argus threads
        c.output = [h] { return static_cast<const float*>(h->out.data()); };
        c.bytes_materialised = double(explain(h->y, fused).materialised_bytes_into_out());
        c.label = "weights packed once: " + std::to_string(h->served.bytes() >> 10) + " KiB";
        return c;
      }};
}
}  // namespace detail

/// argus's fused evaluator on the module's weights packed once (argus::prepack): rows named
/// fused_prepacked, or, paired, fused_vs_fused_prepacked, whose ratio is what packing the
/// weights on every call costs (below 1: prepacked is faster). Module is a
/// multi_head_attention of float, as for register_module.
template <class Module>
other_evaluator prepacked_evaluator() {
  if constexpr (!MultiHeadAttentionModule<Module>) {
    static_assert(MultiHeadAttentionModule<Module>,
                  "argument_is_a_multi_head_attention: argus::bench::prepacked_evaluator<Module>() "
                  "packs the weights of an argus::multi_head_attention Module");
    return {};
  } else if constexpr (!benchmarked_module_is_float<typename Module::value_type>) {
    static_assert(benchmarked_module_is_float<typename Module::value_type>,
                  "benchmarked_module_is_float: argus::bench::prepacked_evaluator<Module>() "
                  "benchmarks a multi_head_attention of float");
    return {};
  } else {
    return detail::prepacked_evaluator_accepted<Module>();
  }
}

/// Which rows register_module adds.
struct module_rows {
  std::vector<std::int64_t> seq{128, 512, 1024, 4096};  // n = seq_q = seq_kv
  std::vector<std::int64_t> threads{1, 2};
  std::int64_t batch = 1;
  bool fused = true;                      // argus::fused
  bool unfused = true;                    // argus::unfused
  std::vector<other_evaluator> others{};  // after argus's, in this order
  bool check = false;   // fused and unfused rows also compare their output with the other's once
  bool paired = false;  // fused_vs_<other> rows instead of <other>'s: per-pair ratios (see the top)
  std::int64_t min_pairs = 9;  // a paired row runs at least this many pairs (see the top)
};

namespace detail {

/// A module with random weights and biases, a random (batch, n, d_model) input, and the
/// forward expression over it.
template <class Module>
struct module_setup {
  using activation = tensor<float, shape<argus::batch<>, argus::seq<>, model<Module::d_model>>>;
  Module m;
  activation x;  // (B,SEQ,D_MODEL)
  decltype(std::declval<const Module&>().forward(std::declval<const activation&>())) y;

  module_setup(std::size_t batch, std::size_t n)
      : m(randomised()), x(batch, n), y(m.forward(std::as_const(x))) {
    fill_random(x.data(), x.size(), 1, 1.0F);
  }
  // y refers to m and x: neither copied nor moved.
  module_setup(const module_setup&) = delete;
  module_setup& operator=(const module_setup&) = delete;
  module_setup(module_setup&&) = delete;
  module_setup& operator=(module_setup&&) = delete;
  ~module_setup() = default;
  static Module randomised() {
    Module r;
    const float s = 1.0F / std::sqrt(float(Module::d_model));
    fill_random(r.w_q.data(), r.w_q.size(), 11, s);
    fill_random(r.w_k.data(), r.w_k.size(), 12, s);
    fill_random(r.w_v.data(), r.w_v.size(), 13, s);
    fill_random(r.w_o.data(), r.w_o.size(), 14, s);
    if constexpr (Module::has_bias) {
      fill_random(r.b_q.data(), r.b_q.size(), 15, 0.1F);
      fill_random(r.b_k.data(), r.b_k.size(), 16, 0.1F);
      fill_random(r.b_v.data(), r.b_v.size(), 17, 0.1F);
      fill_random(r.b_o.data(), r.b_o.size(), 18, 0.1F);
    }
    return r;
  }
  /// What another evaluator is handed, writing into `out`.
  module_problem problem(float* out, int threads) const {
    const auto bias = [](const auto& b) -> const float* {
      if constexpr (Module::has_bias)
        return b.data();
      else
        return nullptr;
    };
    return {x.extent(0),  x.extent(1),  Module::d_model, Module::heads, Module::kv_heads,
            Module::d_k,  Module::d_v,  x.data(),        m.w_q.data(),  m.w_k.data(),
            m.w_v.data(), m.w_o.data(), bias(m.b_q),     bias(m.b_k),   bias(m.b_v),
            bias(m.b_o),  out,          threads};
  }
};

/// Prepares `other` for the row and checks its output against argus's fused one; an empty
/// run (the row has failed: SkipWithError) when it cannot run or differs past 1e-3.
template <class Module>
prepared_call prepare_checked(benchmark::State& state, const other_evaluator& other,
                              const module_setup<Module>& setup, const module_problem& p,
                              double& worst) {
  prepared_call call = other.prepare(p);
  if (!call.run) {
    state.SkipWithError((other.name + " cannot run this row: " + call.label).c_str());
    return {};
  }
  call.run();
  {
    const auto reference = evaluate(setup.y, fused);  // (B,SEQ,D_MODEL)
    worst = worst_difference(call.output(), reference.data(), reference.size());
  }
  if (!(worst <= 1e-3)) {
    state.SkipWithError(("output differs from argus fused: " + std::to_string(worst)).c_str());
    return {};
  }
  return call;
}

/// The value at fraction q (0 to 1) of sorted `v` (linear between neighbours). pre: v sorted,
/// not empty.
inline double quantile(const std::vector<double>& v, double q) {
  const double at = q * double(v.size() - 1);
  const auto lo = std::size_t(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

/// How long, at least, a paired row on more than one thread runs untimed calls of a library
/// before timing one (the top of this header): longer than OpenMP's threads poll after a call
/// when OMP_WAIT_POLICY is unset (libgomp's 300 000 spins, "about 3 ms, 5 times longer or
/// shorter depending on the CPU"; 2-5 ms measured on an Intel Xeon, docs/performance.md
/// "Paired rows on two threads").
inline constexpr std::chrono::milliseconds paired_settle{20};

/// One fused_vs_<other> row: see the top of this header.
template <class Module>
void paired_row(benchmark::State& state, const other_evaluator& other, std::size_t batch,
                std::size_t n, int threads, std::size_t min_pairs) {
  using activation = typename module_setup<Module>::activation;
  begin_row(threads);
  const module_setup<Module> setup(batch, n);
  activation out(batch, n), theirs(batch, n);  // (B,SEQ,D_MODEL) each
  double worst = 0;
  prepared_call call =
      prepare_checked(state, other, setup, setup.problem(theirs.data(), threads), worst);
  if (!call.run) {
    argus::set_num_threads(0);
    return;
  }
  reset_rss_high_water();
  state.SetLabel(call.label);
  auto ours = [&] { evaluate(setup.y, fused, out); };
  ours();  // warm, as timed_loop does
  std::vector<double> fused_ms, other_ms, ratios;
  using clock = std::chrono::steady_clock;
  auto ms_of = [](auto&& f) {
    const auto t0 = clock::now();
    f();
    benchmark::ClobberMemory();
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  // On more than one thread, untimed calls first, for paired_settle and at least one call:
  // the other library's threads settle and this one's are polling, as in a loop of its own
  // calls (the top of this header).
  auto timed = [&](auto&& f) {
    if (threads > 1) {
      const auto until = clock::now() + paired_settle;
      do f();
      while (clock::now() < until);
    }
    return ms_of(f);
  };
  auto pair = [&] {
    const bool fused_first = fused_ms.size() % 2 == 0;
    const double a = fused_first ? timed(ours) : timed(call.run);
    const double b = fused_first ? timed(call.run) : timed(ours);
    fused_ms.push_back(fused_first ? a : b);
    other_ms.push_back(fused_first ? b : a);
    ratios.push_back(other_ms.back() / fused_ms.back());
  };
  for (auto _ : state) pair();
  while (ratios.size() < min_pairs) pair();
  std::sort(fused_ms.begin(), fused_ms.end());
  std::sort(other_ms.begin(), other_ms.end());
  std::sort(ratios.begin(), ratios.end());
  const double fused_median = quantile(fused_ms, 0.5);
  const double flops = module_flops<Module>(batch, n, n, false);
  state.counters["ratio"] = quantile(ratios, 0.5);
  state.counters["ratio_q1"] = quantile(ratios, 0.25);
  state.counters["ratio_q3"] = quantile(ratios, 0.75);
  state.counters["fused_ms"] = fused_median;
  state.counters["other_ms"] = quantile(other_ms, 0.5);
  state.counters["pairs"] = double(ratios.size());
  state.counters["GFLOPS"] = flops * 1e-6 / fused_median;
  state.counters["peak_pct"] = 100.0 * flops * 1e-6 / fused_median / peak_gflops(threads);
  state.counters["peak_rss_mb"] = rss_high_water_mib();
  state.counters["max_diff"] = worst;
  argus::set_num_threads(0);
}

/// One row: argus's `evaluator` ("fused" or "unfused") when `other` is null, else `other`.
template <class Module>
void module_row(benchmark::State& state, const std::string& evaluator, const other_evaluator* other,
                std::size_t batch, std::size_t n, int threads, bool check) {
  using activation = typename module_setup<Module>::activation;
  begin_row(threads);
  const module_setup<Module> setup(batch, n);
  activation out(batch, n);  // (B,SEQ,D_MODEL)
  const auto& y = setup.y;
  const double flops = module_flops<Module>(batch, n, n, false);
  if (other == nullptr) {
    const bool is_fused = evaluator == "fused";
    if (is_fused)
      timed_loop(state, threads, flops, double(explain(y, fused).materialised_bytes_into_out()),
                 [&] { evaluate(y, fused, out); });
    else
      timed_loop(state, threads, flops, double(explain(y, unfused).materialised_bytes_into_out()),
                 [&] { evaluate(y, unfused, out); });
    if (check) {
      const auto reference = is_fused ? evaluate(y, unfused) : evaluate(y, fused);
      const double worst = worst_difference(out.data(), reference.data(), reference.size());
      if (!(worst <= 1e-3))
        state.SkipWithError(("fused and unfused differ: " + std::to_string(worst)).c_str());
    }
    return;
  }
  double worst = 0;
  prepared_call call =
      prepare_checked(state, *other, setup, setup.problem(out.data(), threads), worst);
  if (!call.run) {
    argus::set_num_threads(0);
    return;
  }
  reset_rss_high_water();  // the reference is gone; the inputs and the evaluator's buffers stay
  state.SetLabel(call.label);
  timed_loop(state, threads, flops, call.bytes_materialised, call.run, true);  // checked: warm
  state.counters["max_diff"] = worst;
}

}  // namespace detail

namespace detail {

/// register_module's work, once Module is accepted.
template <class Module>
void register_module_accepted(const std::string& family, const module_rows& rows) {
  // Each registration keeps its own copy of the evaluator: they outlive `rows`.
  std::vector<std::pair<std::string, std::shared_ptr<const other_evaluator>>> evaluators;
  if (rows.fused) evaluators.emplace_back("fused", nullptr);
  if (rows.unfused) evaluators.emplace_back("unfused", nullptr);
  if (!rows.paired)
    for (const other_evaluator& o : rows.others)
      evaluators.emplace_back(o.name, std::make_shared<const other_evaluator>(o));
  std::string config = "/h:" + std::to_string(Module::heads);
  if (Module::kv_heads != Module::heads) config += "/kv_h:" + std::to_string(Module::kv_heads);
  config += "/d_model:" + std::to_string(Module::d_model);
  if (rows.batch != 1) config += "/batch:" + std::to_string(rows.batch);
  const auto batch = std::size_t(rows.batch);
  if (rows.paired)
    for (const other_evaluator& o : rows.others) {
      const auto other = std::make_shared<const other_evaluator>(o);
      for (const std::int64_t t : rows.threads)
        for (const std::int64_t n : rows.seq) {
          std::string row = family;
          row.append("/fused_vs_").append(o.name).append("/n:").append(std::to_string(n));
          row.append(config).append("/threads:").append(std::to_string(t));
          const auto min_pairs = std::size_t(std::max<std::int64_t>(1, rows.min_pairs));
          benchmark::RegisterBenchmark(row.c_str(),
                                       [other, batch, n, t, min_pairs](benchmark::State& s) {
                                         detail::paired_row<Module>(
                                             s, *other, batch, std::size_t(n), int(t), min_pairs);
                                       })
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
    }
  for (const auto& [name, other] : evaluators) {
    for (const std::int64_t t : rows.threads)
      for (const std::int64_t n : rows.seq) {
        std::string row = family;
        row.append("/").append(name).append("/n:").append(std::to_string(n)).append(config);
        row.append("/threads:").append(std::to_string(t));
        benchmark::RegisterBenchmark(
            row.c_str(),
            [name = name, other = other, batch, n, t, check = rows.check](benchmark::State& s) {
              detail::module_row<Module>(s, name, other.get(), batch, std::size_t(n), int(t),
                                         check);
            })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
  }
}

}  // namespace detail

/// Registers `family`/<evaluator>/n:…/h:…[/kv_h:…]/d_model:…[/batch:…]/threads:… for argus's
/// fused and unfused evaluators and each of rows.others (with rows.paired, fused_vs_<other>
/// rows instead), one row per (n, threads): the forward of Module on a self-attention input. Module
/// is a multi_head_attention<...> of float (argument_is_a_multi_head_attention, then
/// benchmarked_module_is_float; a prepacked module is benchmarked through
/// rows.others = {prepacked_evaluator<Module>()}). Call it before
/// benchmark::RunSpecifiedBenchmarks (at static initialisation, as BENCHMARK() does, or in main).
template <class Module>
void register_module(const std::string& family, const module_rows& rows = {}) {
  if constexpr (!MultiHeadAttentionModule<Module>) {
    static_assert(
        MultiHeadAttentionModule<Module>,
        "argument_is_a_multi_head_attention: argus::bench::register_module<Module>(family) "
        "benchmarks an argus::multi_head_attention (its prepacked form through "
        "rows.others = {argus::bench::prepacked_evaluator<Module>()})");
  } else if constexpr (!benchmarked_module_is_float<typename Module::value_type>) {
    static_assert(benchmarked_module_is_float<typename Module::value_type>,
                  "benchmarked_module_is_float: argus::bench::register_module<Module>(family) "
                  "benchmarks a multi_head_attention of float: its rows hand float inputs and "
                  "weights to every evaluator");
  } else {
    detail::register_module_accepted<Module>(family, rows);
  }
}

}  // namespace argus::bench
