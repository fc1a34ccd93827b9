// bench/kernel_softmax_rows.cpp -- kernel::softmax_rows alone, one thread.
//
// Score blocks of attention: (rows x cols) with rows = 64 queries and cols = the number of
// keys, 64 .. 4096, fp32; one fp64 case for reference. The block of 64 x 4096 floats is 1 MiB
// (L2-resident); smaller ones sit in L1. Counters:
//   bytes_per_second  each entry read and written once per call (the kernel makes three
//                     passes, the last two over data already in cache)
//   items_per_second  entries (exponentials) per second
// smoke-filter: BM_softmax_rows/cols:64$
#include "argus/kernel/softmax_rows.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <vector>

namespace {

template <class T>
void BM_softmax(benchmark::State& state) {
  constexpr std::size_t rows = 64;
  const auto cols = static_cast<std::size_t>(state.range(0));
  std::vector<T> s(rows * cols);  // (ROWS, COLS)
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-8.0, 8.0);
  for (T& x : s) x = T(u(rng));
  for (auto _ : state) {
    // In place, call after call: from the second call on the input is the previous
    // output, which costs the same (no masked entries, every exponential computed).
    argus::kernel::softmax_rows<T>(s.data(), rows, cols, cols);
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  const auto entries = static_cast<std::int64_t>(rows * cols);
  state.SetItemsProcessed(state.iterations() * entries);
  state.SetBytesProcessed(state.iterations() * entries * std::int64_t(2 * sizeof(T)));
}

void BM_softmax_rows(benchmark::State& state) { BM_softmax<float>(state); }
void BM_softmax_rows_double(benchmark::State& state) { BM_softmax<double>(state); }

BENCHMARK(BM_softmax_rows)->ArgName("cols")->Arg(64)->Arg(100)->Arg(512)->Arg(1024)->Arg(4096);
BENCHMARK(BM_softmax_rows_double)->ArgName("cols")->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
