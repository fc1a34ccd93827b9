// bench/kernel_attention.cpp -- the fused attention core, kernel::flash_attention, alone.
//
// Shapes: batch 1, 8 heads, d_k = d_v = 64, Q/K/V/O as (B, H, S, D), fp32. Arguments are
// (n, threads, causal) for prefill, seq_q = seq_kv = n; and (seq_kv, threads) for decode,
// seq_q = 1. flash_attention_double/<n>/<threads>/<causal> is the prefill in double, its
// peak_pct against half the float peak (docs/performance.md, "Double's exponential in
// registers"); unfused_attention_double/<n>/<threads>/<causal> the same problem through
// kernel::attention_unfused, the unfused evaluator's kernel (scores, softmax_rows, P·V each
// materialised; docs/performance.md, "The unfused softmax's exponential in double"). Other head
// widths (docs/performance.md, "Key tiles of wide heads"), 1 thread:
//   flash_attention_width/<n>/<d>           prefill, 8 heads of d
//   flash_decode_width/<seq_kv>/<d>/<h>/<kv_h>  one query, h heads over kv_h K/V heads of d
// and, on 1 and 2 threads, decoding in a model (each call over the next layer's K/V cache, so
// that K and V come from memory, as in a model's forward pass):
//   flash_decode_model/<seq_kv>/<d>/<h>/<kv_h>/<threads>/<small_pages>  (1: the K/V caches on
//   a std::vector's 4 KiB pages; 0: on 2 MiB pages, as argus's tensors)
// Counters:
//   GFLOPS    4 · B · h · n_q · n_kv · d_k flops per call (QK^T and P·V, 2 flops per FMA;
//             half of that under a causal mask), as a rate.
//   peak_pct  GFLOPS / the measured FMA peak of the same number of threads (argus/bench/peak.hpp).
//   peak_GFLOPS the measured peak itself.
//   cpu_peak_pct the same ratio with the process CPU time of the calls in place of the wall
//             time, against the one-thread peak: what the kernel achieves while it runs,
//             whatever else shares the machine (on a loaded machine the wall-clock
//             figures measure the load as much as the kernel).
// flash_item_parts/<n> (seq_q = seq_kv = n, 1 thread) runs flash_attention's work items by
// hand, as flash_attention_tiles_of_queries does (kernel::detail::start_query_item and
// fetch_if_first_of_pair, run_item, store_set), with run_item called once per key tile and each
// step timed: where an item's time goes (docs/performance.md, "Starting and ending a work
// item"). Counters, per item:
//   start_us, tiles_us, store_us  the three steps;
//   key_tile_us      tiles_us over the key tiles of an item (a short last tile counts as one);
//   start_store_pct  start + store, in percent of the item.
// flash_tile_parts/<keys> (1 thread) runs one key tile of <keys> keys (d 64) against one row set
// of queries on lanes (the q_tile rows of the ISA), hot, each of its three passes repeated and
// timed apart: the score pass (score_tile), the softmax step (softmax_step), the value pass
// (lane_value_tile): where a tile's time goes with its operands in cache, against which the
// loop nest's own rate shows what going from tile to tile costs (docs/performance.md, "K and V
// tiles of 48 KiB on AVX-512"). Counters:
//   score_pct, value_pct  the pass's flops over its time, in % of the one-thread peak;
//   softmax_ns       the softmax step's time;
//   tile_pct         the three passes together, in % of the peak.
// smoke-filter: flash_(attention/1024/1/0|[a-z]+_parts/[19]|decode_(width/1024/1|model/256.*1/0))
// smoke-filter: unfused_attention_double/1024/1/0
#include "argus/bench/peak.hpp"
#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/parallel.hpp"
#include "argus/tensor/aligned_buffer.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr std::size_t heads = 8, d = 64;

double peak_gflops(int threads) {
  static std::map<int, double> cache;
  auto it = cache.find(threads);
  if (it == cache.end())
    it = cache.emplace(threads, argus::bench::measure_peak_gflops(threads)).first;
  return it->second;
}

template <class T = float>
struct attention_data {
  std::vector<T> q, k, v, o;  // Q, O (1, H, SEQ_Q, W); K, V (1, KV_H, SEQ_KV, W)
  argus::kernel::attention_problem<T> p{};

  attention_data(std::size_t seq_q, std::size_t seq_kv, bool causal, std::size_t h = heads,
                 std::size_t kv_h = heads, std::size_t w = d)
      : q(h * seq_q * w), k(kv_h * seq_kv * w), v(kv_h * seq_kv * w), o(h * seq_q * w) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto* t : {&q, &k, &v})
      for (T& x : *t) x = u(rng);
    p.batch = 1, p.heads = h, p.kv_heads = kv_h, p.seq_q = seq_q, p.seq_kv = seq_kv, p.d_k = w,
    p.d_v = w;
    p.q = q.data(), p.q_batch = h * seq_q * w, p.q_head = seq_q * w, p.q_row = w;
    p.k = k.data(), p.k_batch = kv_h * seq_kv * w, p.k_head = seq_kv * w, p.k_row = w;
    p.v = v.data(), p.v_batch = kv_h * seq_kv * w, p.v_head = seq_kv * w, p.v_row = w;
    p.o = o.data(), p.o_batch = h * seq_q * w, p.o_head = seq_q * w, p.o_row = w;
    p.scale = T(1) / std::sqrt(T(w));
    p.causal = causal;
  }
};

/// Times call() (flash_attention(data.p) unless given), `before` called ahead of each call
/// (untimed). The peak of T: the measured float peak times sizeof(float) / sizeof(T) (the same
/// FMAs, half the lanes in double).
template <class T, class Before, class Call>
void run(benchmark::State& state, attention_data<T>& data, int threads, double flops, Before before,
         Call call) {
  argus::set_num_threads(static_cast<std::size_t>(threads));
  call();  // warm the pool and the caches
  double seconds = 0;
  std::clock_t cpu = 0;
  for (auto _ : state) {
    before();
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    call();
    cpu += std::clock() - c0;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(data.o.data());
    benchmark::ClobberMemory();
  }
  argus::set_num_threads(0);
  const double total = flops * 1e-9 * double(state.iterations());
  const double lanes = double(sizeof(float)) / double(sizeof(T));
  const double peak = peak_gflops(threads) * lanes;
  state.counters["GFLOPS"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_pct"] = 100.0 * total / seconds / peak;
  state.counters["peak_GFLOPS"] = peak;
  state.counters["cpu_peak_pct"] =
      100.0 * total / (double(cpu) / CLOCKS_PER_SEC) / (peak_gflops(1) * lanes);
}

template <class T, class Before>
void run(benchmark::State& state, attention_data<T>& data, int threads, double flops,
         Before before) {
  run(state, data, threads, flops, before, [&] { argus::kernel::flash_attention(data.p); });
}

template <class T>
void run(benchmark::State& state, attention_data<T>& data, int threads, double flops) {
  run(state, data, threads, flops, [] {});
}

/// Prefill, seq_q = seq_kv = n, 8 heads of width w, in T; with `unfused`,
/// kernel::attention_unfused (scores, softmax_rows and P·V, each materialised) in place of the
/// loop nest.
template <class T = float>
void prefill(benchmark::State& state, std::size_t n, int threads, bool causal, std::size_t w,
             bool unfused = false) {
  attention_data<T> data(n, n, causal, heads, heads, w);
  const double flops = 4.0 * heads * double(n) * double(n) * double(w) * (causal ? 0.5 : 1.0);
  const auto nothing_before = [] {};
  const auto unfused_call = [&] { argus::kernel::attention_unfused(data.p); };
  if (unfused)
    run(state, data, threads, flops, nothing_before, unfused_call);
  else
    run(state, data, threads, flops);
}

/// One query of h heads over n_kv keys of kv_h K/V heads of width w; K and V are read once.
void decode(benchmark::State& state, std::size_t n_kv, int threads, std::size_t h, std::size_t kv_h,
            std::size_t w) {
  attention_data data(1, n_kv, false, h, kv_h, w);
  run(state, data, threads, 4.0 * double(h) * double(n_kv) * double(w));
  state.SetBytesProcessed(state.iterations() * std::int64_t(2 * kv_h * n_kv * w * sizeof(float)));
}

/// Decoding in a model: one query of h heads over n_kv keys of kv_h K/V heads of width w, each
/// call over the next of `layers` layers' K/V caches, as a model's forward pass reads them, so
/// that every call's K and V come from memory whatever the L3 (the caches make
/// model_cache_bytes together, less what a last layer would not fill); decode() repeats one layer's
/// call, whose K and V stay in L3 where they fit. The caches lie on 2 MiB pages as argus's tensors
/// do (aligned_buffer), or, with `small_pages`, on the 4 KiB pages of a std::vector (where
/// transparent huge pages are "madvise" or "never"; under "always" on 2 MiB pages too).
constexpr std::size_t model_cache_bytes = std::size_t{512} << 20;

/// The K and V caches of decode_model, allocated once a process (on first use) and reused by
/// every row: fresh pages for each row (512 MiB, 14 rows) took longer than the rows' timing.
struct model_caches {
  argus::aligned_buffer<float> k_huge, v_huge;
  std::unique_ptr<float[]> k_small, v_small;
  static model_caches& get(bool small_pages) {
    static model_caches caches;
    constexpr std::size_t n = model_cache_bytes / (2 * sizeof(float));
    if (small_pages && caches.k_small == nullptr)
      caches.k_small.reset(new float[n]), caches.v_small.reset(new float[n]);
    if (!small_pages && caches.k_huge.size() == 0)
      caches.k_huge = argus::aligned_buffer<float>(n, argus::uninitialized),
      caches.v_huge = argus::aligned_buffer<float>(n, argus::uninitialized);
    return caches;
  }
};

void decode_model(benchmark::State& state, std::size_t n_kv, int threads, std::size_t h,
                  std::size_t kv_h, std::size_t w, bool small_pages) {
  attention_data data(1, n_kv, false, h, kv_h, w);
  const std::size_t per = data.k.size();  // elements of one layer's K (and V)
  const std::size_t layers =
      std::max<std::size_t>(2, model_cache_bytes / (2 * per * sizeof(float)));
  model_caches& caches = model_caches::get(small_pages);
  const std::size_t room = model_cache_bytes / (2 * sizeof(float));
  if (layers * per > room) {
    state.SkipWithError("flash_decode_model: one layer's K and V make more than the caches hold");
    return;
  }
  float* k = small_pages ? caches.k_small.get() : caches.k_huge.data();
  float* v = small_pages ? caches.v_small.get() : caches.v_huge.data();
  for (std::size_t l = 0; l < layers; ++l) {
    std::copy(data.k.begin(), data.k.end(), k + l * per);
    std::copy(data.v.begin(), data.v.end(), v + l * per);
  }
  std::size_t layer = 0;
  run(state, data, threads, 4.0 * double(h) * double(n_kv) * double(w), [&] {
    data.p.k = k + layer * per, data.p.v = v + layer * per;
    layer = (layer + 1) % layers;
  });
  state.SetBytesProcessed(state.iterations() * std::int64_t(2 * kv_h * n_kv * w * sizeof(float)));
  state.counters["layers"] = double(layers);
}

std::size_t arg(const benchmark::State& state, int i) {
  return static_cast<std::size_t>(state.range(i));
}

void flash_attention(benchmark::State& state) {
  prefill(state, arg(state, 0), int(arg(state, 1)), arg(state, 2) != 0, d);
}
void flash_decode(benchmark::State& state) {
  decode(state, arg(state, 0), int(arg(state, 1)), heads, heads, d);
}
void flash_attention_width(benchmark::State& state) {
  prefill(state, arg(state, 0), 1, false, arg(state, 1));
}
void flash_attention_double(benchmark::State& state) {
  prefill<double>(state, arg(state, 0), int(arg(state, 1)), arg(state, 2) != 0, d);
}
void unfused_attention_double(benchmark::State& state) {
  prefill<double>(state, arg(state, 0), int(arg(state, 1)), arg(state, 2) != 0, d, true);
}
void flash_decode_width(benchmark::State& state) {
  decode(state, arg(state, 0), 1, arg(state, 2), arg(state, 3), arg(state, 1));
}

void flash_decode_model(benchmark::State& state) {
  decode_model(state, arg(state, 0), int(arg(state, 4)), arg(state, 2), arg(state, 3),
               arg(state, 1), arg(state, 5) != 0);
}

void flash_item_parts(benchmark::State& state) {
  namespace kd = argus::kernel::detail;
  using clock = std::chrono::steady_clock;
  const auto n = static_cast<std::size_t>(state.range(0));
  attention_data data(n, n, false);
  argus::set_num_threads(1);  // the items of a one-thread call
  const kd::query_items plan = kd::plan_query_items(data.p);
  const kd::flash_layout<float> layout(data.p, plan.sets());
  const std::size_t key_tiles = (n + layout.k_tile - 1) / layout.k_tile;
  double start = 0, tiles = 0, store = 0;  // seconds
  auto seconds = [](clock::duration t) { return std::chrono::duration<double>(t).count(); };
  const bool into_l1 = argus::detail::roomy_l1d();
  for (auto _ : state) {
    const std::uint64_t call = kd::next_items_call();
    for (std::size_t task = 0; task < plan.count(); ++task) {
      const auto t0 = clock::now();
      kd::flash_item<float> it = kd::start_query_item(data.p, plan, layout, task);
      kd::fetch_if_first_of_pair(it, call, into_l1);  // a head's first item fetches K and V
      const auto t1 = clock::now();
      kd::output_prefetch<float> prefetch(it, 0, n);  // as flash_attention's items do
      for (std::size_t j0 = 0; j0 < n; j0 += layout.k_tile)
        kd::run_item<float>(it, j0, std::min(n, j0 + layout.k_tile), &prefetch);
      const auto t2 = clock::now();
      for (std::size_t si = 0; si < it.set_count; ++si)
        kd::store_set(data.p, it.b, it.sets[si], it.dvp);
      const auto t3 = clock::now();
      start += seconds(t1 - t0), tiles += seconds(t2 - t1), store += seconds(t3 - t2);
    }
    benchmark::DoNotOptimize(data.o.data());
    benchmark::ClobberMemory();
  }
  argus::set_num_threads(0);
  const double items = double(state.iterations()) * double(plan.count());
  state.counters["start_us"] = 1e6 * start / items;
  state.counters["tiles_us"] = 1e6 * tiles / items;
  state.counters["store_us"] = 1e6 * store / items;
  state.counters["key_tile_us"] = 1e6 * tiles / items / double(key_tiles);
  state.counters["start_store_pct"] = 100.0 * (start + store) / (start + tiles + store);
  state.counters["GFLOPS"] = benchmark::Counter(4e-9 * heads * double(n) * double(n) * d,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void flash_tile_parts(benchmark::State& state) {
  namespace kd = argus::kernel::detail;
  using clock = std::chrono::steady_clock;
  constexpr std::size_t tile = kd::flash_blocking<float>::q_tile, reps = 64;
  const auto keys = static_cast<std::size_t>(state.range(0));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto filled = [&](std::size_t n, float scale) {
    argus::aligned_buffer<float> b(n, argus::uninitialized);
    for (std::size_t i = 0; i < n; ++i) b.data()[i] = scale * u(rng);
    return b;
  };
  // K and V rows (keys, d), Qt (d, tile) scaled as start_set scales it, the score tile and the
  // accumulator (d, tile); m starts at the scores' bound, so that no step rescales.
  const argus::aligned_buffer<float> k = filled(keys * d, 1.0f), v = filled(keys * d, 1.0f),
                                     qt = filled(d * tile, 0.125f);
  argus::aligned_buffer<float> st = filled((keys + 1) * tile, 0.0f), acc = filled(d * tile, 0.0f);
  std::vector<float> top(tile), m(tile, 8.0f), l(tile, 0.0f), alpha(tile, 1.0f);
  // Read through a volatile: a null alpha the compiler cannot fold (lane_value_tile's callers
  // pass it at run time), so that the pass compiles as in the loop nest.
  static float* volatile no_rescale = nullptr;
  float* const rescale = no_rescale;
  double score = 0, softmax = 0, value = 0;  // seconds
  auto seconds = [](clock::duration t) { return std::chrono::duration<double>(t).count(); };
  for (auto _ : state) {
    const auto t0 = clock::now();
    for (std::size_t r = 0; r < reps; ++r)
      kd::score_tile<float>(tile, keys, k.data(), d, qt.data(), d, st.data(), top.data());
    const auto t1 = clock::now();
    // After the first, each step runs on the weights the one before it left: the same work.
    for (std::size_t r = 0; r < reps; ++r)
      benchmark::DoNotOptimize(kd::softmax_step<float>(tile, st.data(), keys, top.data(), m.data(),
                                                       l.data(), alpha.data()));
    const auto t2 = clock::now();
    for (std::size_t r = 0; r < reps; ++r)
      kd::lane_value_tile<float>(tile, d, keys, st.data(), v.data(), d, rescale, acc.data());
    const auto t3 = clock::now();
    score += seconds(t1 - t0), softmax += seconds(t2 - t1), value += seconds(t3 - t2);
    benchmark::DoNotOptimize(acc.data());
    benchmark::ClobberMemory();
  }
  const double calls = double(state.iterations()) * double(reps);
  const double pass_gflop = 2e-9 * double(keys) * d * double(tile), peak = peak_gflops(1);
  state.counters["score_pct"] = 100.0 * pass_gflop * calls / score / peak;
  state.counters["value_pct"] = 100.0 * pass_gflop * calls / value / peak;
  state.counters["softmax_ns"] = 1e9 * softmax / calls;
  state.counters["tile_pct"] = 100.0 * 2 * pass_gflop * calls / (score + softmax + value) / peak;
}

void prefill_arguments(benchmark::internal::Benchmark* b) {
  for (int causal : {0, 1})
    for (int threads : {1, 2})
      for (int n : {1024, 2048, 4096}) b->Args({n, threads, causal});
}

void long_prefill_arguments(benchmark::internal::Benchmark* b) {
  for (int causal : {0, 1})
    for (int threads : {1, 2}) b->Args({8192, threads, causal});
}

}  // namespace

BENCHMARK(flash_attention)->Apply(prefill_arguments)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(flash_attention)
    ->Apply(long_prefill_arguments)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK(flash_attention_double)
    ->Args({1024, 1, 0})
    ->Args({1024, 1, 1})
    ->Args({1024, 2, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(unfused_attention_double)
    ->Args({1024, 1, 0})
    ->Args({1024, 1, 1})
    ->Args({1024, 2, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(flash_item_parts)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(flash_tile_parts)
    ->Arg(30)
    ->Arg(60)
    ->Arg(96)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(flash_decode)
    ->Args({8192, 1})
    ->Args({8192, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(flash_attention_width)
    ->Args({2048, 128})
    ->Args({2048, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(flash_decode_width)
    ->ArgsProduct({{1024, 8192}, {128, 256}, {8}, {1}})
    ->ArgsProduct({{1024, 8192}, {128, 256}, {32}, {8}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(flash_decode_model)
    ->ArgsProduct({{256, 1024, 2048, 8192}, {128}, {32}, {8}, {1, 2}, {0}})
    ->ArgsProduct({{256, 1024, 8192}, {128}, {32}, {8}, {1, 2}, {1}})
    ->ArgsProduct({{1024, 8192}, {64, 256}, {32}, {8}, {1, 2}, {0}})
    ->ArgsProduct({{1024, 8192}, {128}, {8, 64}, {8}, {1, 2}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
