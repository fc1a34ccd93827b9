// 05_what_differs_between_heads -- every head of multi-head attention reads the same x; what
// differs between heads is only their weights.
//   - a module with d_model 8 and 2 heads (d_k = 4) on one sentence of 4 tokens: each head's
//     Q, K, V and attention weights, side by side;
//   - head h's Q is x times columns [h*d_k, (h+1)*d_k) of W_q: all 8 features of x, not a
//     slice of x (that would be the "narrow" heads of 06_wide_and_narrow_heads);
//   - the same module with head 1 given head 0's weights: the heads become identical.
//
// It prints the matrices, checks each statement, and exits non-zero if one does not hold.
// docs/tutorial/questions.md quotes it.
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <random>

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

/// Prints t(0, h, i, ·) for every head h side by side, one line per position i.
template <class PerHead>
void side_by_side(const char* title, const PerHead& t) {
  std::printf("%s\n", title);
  for (std::size_t i = 0; i < t.extent(2); ++i) {
    std::printf("  token %zu", i);
    for (std::size_t h = 0; h < t.extent(1); ++h) {
      std::printf("  |");
      for (std::size_t d = 0; d < t.extent(3); ++d) std::printf(" %6.3f", double(t(0, h, i, d)));
    }
    std::printf("\n");
  }
}

/// max over (b, i, d) of |t(b, h1, i, d) - t(b, h0, i, d)|.
template <class PerHead>
double head_difference(const PerHead& t, std::size_t h0, std::size_t h1) {
  double m = 0;
  for (std::size_t b = 0; b < t.extent(0); ++b)
    for (std::size_t i = 0; i < t.extent(2); ++i)
      for (std::size_t d = 0; d < t.extent(3); ++d)
        m = std::max(m, std::abs(double(t(b, h1, i, d)) - double(t(b, h0, i, d))));
  return m;
}

}  // namespace

int main() {
  using namespace argus;
  std::mt19937 g(5);

  constexpr std::size_t D = 8, H = 2, DK = D / H;  // d_model 8, 2 heads of width 4
  using module_t = multi_head_attention<D, H, mha_options{.bias = false}>;
  module_t mha;
  for (auto* w : {&mha.w_q, &mha.w_k, &mha.w_v, &mha.w_o}) randomize(*w, 1.0, g);

  tensor<float, shape<batch<>, seq<>, model<D>>> x(1, 4);  // (BATCH,SEQ,D_MODEL) = (1,4,8)
  randomize(x, 1.0, g);

  // --- 1. Each head's Q, K, V and attention weights -----------------------------------
  // The module's forward is project -> split_heads -> ...; the same sub-expressions, on the
  // module's weights, give each head's Q, K and V. Every one of them reads the same x.
  const auto q = evaluate(split_heads<H>(project(x, mha.w_q)), unfused);  // (1,H,4,DK)
  const auto k = evaluate(split_heads<H>(project(x, mha.w_k)), unfused);  // (1,H,4,DK)
  const auto v = evaluate(split_heads<H>(project(x, mha.w_v)), unfused);  // (1,H,4,DK)
  const auto y = mha.forward(x);                                          // (1,4,D)
  const auto p = evaluate(attention_weights(y), unfused);                 // (1,H,4,4)
  std::printf("d_model %zu, %zu heads of d_k %zu, one sentence of %zu tokens; head 0 | head 1\n", D,
              H, DK, x.extent(1));
  side_by_side("Q = x·W_q, split into heads", q);
  side_by_side("K = x·W_k, split into heads", k);
  side_by_side("V = x·W_v, split into heads", v);
  side_by_side("attention weights softmax(Q·Kᵀ/sqrt(d_k)) (rows: queries, columns: keys)", p);

  // --- 2. Head h reads all of x: its Q is x·W_q[:, h*DK:(h+1)*DK] -------------------------
  bool all_of_x = true;
  for (std::size_t h = 0; h < H; ++h) {
    tensor<float, shape<model<D>, model<DK>>> w_h;  // (D_MODEL,D_K): head h's columns
    for (std::size_t i = 0; i < D; ++i)
      for (std::size_t d = 0; d < DK; ++d) w_h(i, d) = mha.w_q(i, h * DK + d);
    const auto q_h = evaluate(project(x, w_h), unfused);  // (1,4,DK)
    for (std::size_t i = 0; i < x.extent(1); ++i)
      for (std::size_t d = 0; d < DK; ++d)
        all_of_x &= std::abs(q_h(0, i, d) - q(0, h, i, d)) <= 1e-6f;
  }
  std::printf("what differs:\n");
  check(all_of_x, "head h's Q is x (all 8 features) times columns [4h, 4h+4) of W_q");
  check(head_difference(p, 0, 1) > 0.01, "with different weights, the heads attend differently");

  // --- 3. Give head 1 head 0's weights: the heads become the same -------------------------
  module_t twins = mha;
  for (auto* w : {&twins.w_q, &twins.w_k, &twins.w_v})
    for (std::size_t i = 0; i < D; ++i)
      for (std::size_t d = 0; d < DK; ++d) (*w)(i, DK + d) = (*w)(i, d);
  const auto y_twins = twins.forward(x);
  const auto p_twins = evaluate(attention_weights(y_twins), unfused);  // (1,H,4,4)
  // The heads' outputs before W_o: attend(P, V) of each head.
  const auto o_twins =
      evaluate(attend(attention_weights(y_twins), split_heads<H>(project(x, twins.w_v))),
               fused);  // (1,H,4,DK)
  side_by_side("head 1 given head 0's W_q, W_k, W_v: attention weights", p_twins);
  std::printf("identical weights:\n");
  std::printf("  max |head 1 - head 0|: attention weights %.1e, head outputs %.1e\n",
              head_difference(p_twins, 0, 1), head_difference(o_twins, 0, 1));
  check(head_difference(p_twins, 0, 1) <= 1e-6 && head_difference(o_twins, 0, 1) <= 1e-6,
        "identical weights give identical heads");

  std::printf("%s\n", failures ? "05_what_differs_between_heads: FAILED"
                               : "05_what_differs_between_heads: all checks passed");
  return failures ? 1 : 0;
}
