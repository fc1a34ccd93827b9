// 06_wide_and_narrow_heads -- is x split into d_model/h slices, or only the projections?
//   wide heads    (the paper, PyTorch, argus's module): head h projects all of x,
//                 project(x, W) with W (head<H>, model<D>, head_dim<DK>);
//   narrow heads  head h projects only its slice x[..., h*D/H, (h+1)*D/H),
//                 project(split_heads<H>(x), W) with W (head<H>, model<D/H>, head_dim<DK>).
// Both are argus expressions of the same attention around them. It prints their parameter
// counts, their flops and their measured times side by side, and the results of each; then
// checks that a narrow head is a wide head whose weight is zero outside its slice (wide heads
// can express narrow ones, not the other way round), and that both equal the reference.
//
// Exits non-zero if a check fails. docs/tutorial/questions.md quotes it.
#include <argus/argus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

template <class Tensor>
void randomize(Tensor& t, double scale, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-scale, scale);
  for (auto& v : t) v = static_cast<typename Tensor::value_type>(u(g));
}

template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
  double m = a.size() == b.size() ? 0 : std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double x = double(a.data()[i]), y = double(b.data()[i]);
    m = std::max(m, std::abs(x - y) / (1 + std::abs(y)));
  }
  return m;
}

/// Median wall time of `reps` fused evaluations of e, in microseconds.
template <class E>
double median_us(const E& e, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = argus::evaluate(e, argus::fused);
    const auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (out.size() == 0) return 0;  // keeps the result alive until here
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  using namespace argus;
  set_num_threads(1);  // one thread, so the times compare the work, not the scheduling
  std::mt19937 g(6);

  constexpr std::size_t D = 64, H = 8, DK = D / H, S = D / H;  // d_model 64, 8 heads, slices of 8
  constexpr std::size_t N = 128;                               // tokens
  tensor<float, shape<batch<>, seq<>, model<D>>> x(1, N);      // (BATCH,SEQ,D_MODEL)
  randomize(x, 1.0, g);

  // Wide: every head sees all D features of x.
  tensor<float, shape<head<H>, model<D>, head_dim<DK>>> wq_wide, wk_wide,
      wv_wide;  // (H,D_MODEL,D_K)
  // Narrow: head h sees only features [h*S, (h+1)*S) of x.
  tensor<float, shape<head<H>, model<S>, head_dim<DK>>> wq_narrow, wk_narrow,
      wv_narrow;                                      // (H,D_MODEL/H,D_K)
  tensor<float, shape<model<H * DK>, model<D>>> w_o;  // (H*D_K,D_MODEL)
  for (auto* w : {&wq_wide, &wk_wide, &wv_wide}) randomize(*w, 1.0 / std::sqrt(double(D)), g);
  for (auto* w : {&wq_narrow, &wk_narrow, &wv_narrow}) randomize(*w, 1.0 / std::sqrt(double(S)), g);
  randomize(w_o, 1.0 / std::sqrt(double(D)), g);

  // The same attention around two kinds of projection.
  const auto attention = [&](const auto& q, const auto& k, const auto& v) {
    return project(merge_heads(attend(softmax(mask(scores(q, k), causal)), v)), w_o);
  };
  const auto xs = split_heads<H>(x);  // (B,H,SEQ,S): x's slices, a view
  const auto y_wide = attention(project(x, wq_wide), project(x, wk_wide), project(x, wv_wide));
  const auto y_narrow =
      attention(project(xs, wq_narrow), project(xs, wk_narrow), project(xs, wv_narrow));

  // --- 1. Parameters and costs side by side -----------------------------------------------
  const std::size_t qkv_wide = 3 * wq_wide.size(), qkv_narrow = 3 * wq_narrow.size();
  const std::size_t core = 2 * 2 * H * N * N * DK;  // Q·Kᵀ and P·V: 2 flops per multiply-add
  const std::size_t out = 2 * N * (H * DK) * D;     // merge_heads(...)·W_o
  const int reps = 21;
  const double t_wide = median_us(y_wide, reps), t_narrow = median_us(y_narrow, reps);
  std::printf("d_model %zu, %zu heads of d_k %zu, %zu tokens (causal), 1 thread\n", D, H, DK, N);
  std::printf("                         %14s %14s\n", "wide heads", "narrow heads");
  std::printf("  W_q per head           %8zu x %3zu %8zu x %3zu\n", D, DK, S, DK);
  std::printf("  W_q, W_k, W_v params   %14zu %14zu\n", qkv_wide, qkv_narrow);
  std::printf("  W_o params             %14zu %14zu\n", w_o.size(), w_o.size());
  std::printf("  projection flops       %14zu %14zu\n", 2 * N * qkv_wide, 2 * N * qkv_narrow);
  std::printf("  attention flops        %14zu %14zu\n", core, core);
  std::printf("  output flops           %14zu %14zu\n", out, out);
  std::printf("  time, fused (median)   %11.0f us %11.0f us\n", t_wide, t_narrow);

  // --- 2. The results -------------------------------------------------------------------
  const auto out_wide = evaluate(y_wide, fused);      // (1,N,D)
  const auto out_narrow = evaluate(y_narrow, fused);  // (1,N,D)
  std::printf("results, token 5, features 0..5:\n  wide  ");
  for (std::size_t d = 0; d < 6; ++d) std::printf(" %7.4f", double(out_wide(0, 5, d)));
  std::printf("\n  narrow");
  for (std::size_t d = 0; d < 6; ++d) std::printf(" %7.4f", double(out_narrow(0, 5, d)));
  std::printf("\n");
  check(max_rel_diff(out_wide, evaluate_reference(y_wide)) <= 1e-5 &&
            max_rel_diff(out_narrow, evaluate_reference(y_narrow)) <= 1e-5,
        "wide and narrow, fused, equal the reference");

  // --- 3. A narrow head is a wide head that is zero outside its slice ---------------------
  tensor<float, shape<head<H>, model<D>, head_dim<DK>>> wq_block, wk_block,
      wv_block;  // (H,D_MODEL,D_K)
  const decltype(wq_narrow)* narrow_w[] = {&wq_narrow, &wk_narrow, &wv_narrow};
  decltype(wq_block)* block_w[] = {&wq_block, &wk_block, &wv_block};
  for (std::size_t m = 0; m < 3; ++m)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < S; ++i)
        for (std::size_t d = 0; d < DK; ++d)
          (*block_w[m])(h, h * S + i, d) = (*narrow_w[m])(h, i, d);
  const auto y_block = attention(project(x, wq_block), project(x, wk_block), project(x, wv_block));
  check(max_rel_diff(evaluate(y_block, fused), out_narrow) <= 1e-5,
        "narrow heads == wide heads whose weights are zero outside each head's slice");
  check(qkv_wide == H * qkv_narrow, "wide heads have H times the projection parameters");

  std::printf("%s\n", failures ? "06_wide_and_narrow_heads: FAILED"
                               : "06_wide_and_narrow_heads: all checks passed");
  return failures ? 1 : 0;
}
