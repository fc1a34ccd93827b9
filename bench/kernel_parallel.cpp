// bench/kernel_parallel.cpp -- what kernel::parallel_for itself costs: handing tasks to the
// pool's workers and waiting for them.
//
// BM_parallel_for/tasks:T/task_us:U/gap_us:G/threads:N: one call of T tasks, each a busy loop
// of U microseconds (0: an empty task), on N threads, timed alone (manual time: the call and
// nothing else); between calls the caller keeps its core busy for G microseconds, as a
// program does between two parallel steps. A worker spins for a while after its last task
// and then sleeps (kernel/parallel.hpp), so G decides whether the next call finds it
// spinning (G = 0, 50) or asleep (G = 1000). Counters:
//   overhead_us  time per call beyond the ideal ceil(T / N) · U
// BM_num_threads/set:S: what asking for the thread count costs, with the default
// (set_num_threads(0), S = 0: the CPUs the process may run on, read once) and with a count
// set (S = 1). Kernels ask several times per evaluation; until 2026-11-25 the default read a
// file under /sys on every call (std::thread::hardware_concurrency).
// smoke-filter: BM_parallel_for/tasks:2/task_us:0/gap_us:0/threads:2|BM_num_threads
#include "argus/kernel/parallel.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace {

using clock_type = std::chrono::steady_clock;

/// Keeps the calling thread busy for `us` microseconds.
void busy_for(double us) {
  const auto start = clock_type::now();
  while (std::chrono::duration<double, std::micro>(clock_type::now() - start).count() < us) {
  }
}

void BM_parallel_for(benchmark::State& state) {
  const auto tasks = static_cast<std::size_t>(state.range(0));
  const auto task_us = static_cast<double>(state.range(1));
  const auto gap_us = static_cast<double>(state.range(2));
  const auto threads = static_cast<std::size_t>(state.range(3));
  argus::set_num_threads(threads);
  double total_s = 0;
  for (auto _ : state) {
    busy_for(gap_us);
    const auto start = clock_type::now();
    argus::kernel::parallel_for(tasks, [&](std::size_t, std::size_t) {
      if (task_us > 0) busy_for(task_us);
    });
    const double s = std::chrono::duration<double>(clock_type::now() - start).count();
    state.SetIterationTime(s);
    total_s += s;
  }
  argus::set_num_threads(0);
  const double ideal_us = static_cast<double>((tasks + threads - 1) / threads) * task_us;
  state.counters["overhead_us"] =
      state.iterations() == 0 ? 0.0
                              : total_s * 1e6 / static_cast<double>(state.iterations()) - ideal_us;
}

void arguments(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tasks", "task_us", "gap_us", "threads"});
  for (std::int64_t tasks : {2, 64})
    for (std::int64_t task_us : {0, 5, 200})
      for (std::int64_t gap_us : {0, 50, 1000}) b->Args({tasks, task_us, gap_us, 2});
}

BENCHMARK(BM_parallel_for)->Apply(arguments)->UseManualTime();

void BM_num_threads(benchmark::State& state) {
  argus::set_num_threads(state.range(0) != 0 ? 2 : 0);
  for (auto _ : state) benchmark::DoNotOptimize(argus::num_threads());
  argus::set_num_threads(0);
}
BENCHMARK(BM_num_threads)->ArgName("set")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
