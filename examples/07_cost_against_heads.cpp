// 07_cost_against_heads -- does doubling the heads double the cost? At a fixed d_model, no:
// d_k = d_model / h shrinks as h grows, so
//   projections   4 · 2·n·d_model²            flops, whatever h is;
//   Q·Kᵀ and P·V  h · 2 · 2·n²·d_k = 4·n²·d_model   flops, whatever h is;
//   softmax       h · n² exponentials: the only term that grows with h.
// It times the whole module, fused, on one thread (std::chrono, median of several runs) for
// h = 1, 2, 4, 8, 16, 32 at d_model 512, and prints the flop counts beside the times.
//
//   07_cost_against_heads            n = 1024 tokens, 5 runs per h (a few seconds)
//   07_cost_against_heads --quick    n = 256 tokens, 3 runs per h (what ctest runs)
//
// Exits non-zero if a configuration's result differs from the unfused evaluation.
// docs/tutorial/questions.md quotes it.
// ctest-args: --quick
#include <argus/argus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

int failures = 0;

constexpr std::size_t d_model = 512;

struct row {
  std::size_t heads, d_k;
  double projection_gflop, core_gflop, exps_millions, ms;
};

/// Times multi_head_attention<d_model, H>::forward(x, causal) evaluated fused, on n tokens.
template <std::size_t H>
row measure(std::size_t n, int reps) {
  using namespace argus;
  multi_head_attention<d_model, H> mha;
  std::mt19937 g(H);
  std::uniform_real_distribution<float> u(-1.0f / std::sqrt(float(d_model)),
                                          1.0f / std::sqrt(float(d_model)));
  for (auto* w : {&mha.w_q, &mha.w_k, &mha.w_v, &mha.w_o})
    for (float& v : *w) v = u(g);
  tensor<float, shape<batch<>, seq<>, model<d_model>>> x(1, n);  // (BATCH,SEQ,D_MODEL)
  for (float& v : x) v = u(g) * 16;

  const auto y = mha.forward(x, causal);
  auto out = evaluate(y, fused);  // warm-up, and the check
  if (n <= 256) {
    const auto ref = evaluate(y, unfused);
    double m = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      m = std::max(m, std::abs(double(out.data()[i]) - double(ref.data()[i])) /
                          (1 + std::abs(double(ref.data()[i]))));
    if (m > 1e-4) {
      std::printf("  [FAILED] h = %zu: fused differs from unfused by %.1e\n", H, m);
      ++failures;
    }
  }
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    evaluate(y, fused, out);  // into the same buffer
    const auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(t.begin(), t.end());
  const double nn = double(n);
  // Causal: the fused loop nest skips key tiles above the diagonal; the counts below are the
  // full n × n products, so that they compare across h.
  return {H,
          d_model / H,
          4 * 2 * nn * d_model * d_model * 1e-9,
          H * 2 * (2 * nn * nn * double(d_model / H)) * 1e-9,
          H * nn * nn * 1e-6,
          t[t.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::size_t n = quick ? 256 : 1024;
  const int reps = quick ? 3 : 5;
  argus::set_num_threads(1);

  const row rows[] = {measure<1>(n, reps), measure<2>(n, reps),  measure<4>(n, reps),
                      measure<8>(n, reps), measure<16>(n, reps), measure<32>(n, reps)};
  std::printf("multi_head_attention<%zu, h>::forward(x, causal), %zu tokens, fused, 1 thread\n",
              d_model, n);
  std::printf("   h   d_k   projections   Q·Kᵀ + P·V   softmax exps      time        rate\n");
  for (const row& r : rows)
    std::printf("  %2zu   %3zu   %7.2f GFLOP %7.2f GFLOP %9.1f M   %7.1f ms %6.1f GFLOP/s\n",
                r.heads, r.d_k, r.projection_gflop, r.core_gflop, r.exps_millions, r.ms,
                (r.projection_gflop + r.core_gflop) / (r.ms * 1e-3));
  std::printf("time at h = 32 over time at h = 1: %.2f\n", rows[5].ms / rows[0].ms);
  std::printf("%s\n", failures ? "07_cost_against_heads: FAILED"
                               : "07_cost_against_heads: all checks passed");
  return failures ? 1 : 0;
}
