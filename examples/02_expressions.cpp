// 02_expressions -- multi-head attention written from its building blocks:
//     project -> split_heads -> scores -> mask -> softmax -> attend -> merge_heads -> project
// evaluated unfused (every step materialised) and fused (one loop nest), both compared
// with the double-precision evaluate_reference. Then the two other projection forms:
// per-head weights (head, model, head_dim), and narrow heads that each project only their
// d_model/h slice of x.
//
// It prints each comparison and exits non-zero if one is off. The docs quote it
// (docs/tutorial/getting_started.md, docs/reference/api.md).
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
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

/// max over elements of |a - b| / (1 + |b|): a relative difference that tolerates zeros.
template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = double(a.data()[i]), y = double(b.data()[i]);
    m = std::max(m, std::abs(x - y) / (1 + std::abs(y)));
  }
  return m;
}

// float against the double reference: products of 32 terms, then a softmax.
constexpr double tolerance = 1e-5;

}  // namespace

int main() {
  using namespace argus;
  std::mt19937 g(42);

  constexpr std::size_t D = 32, H = 4, DK = D / H;  // d_model 32, 4 heads of width 8
  using activations = tensor<float, shape<batch<>, seq<>, model<D>>>;
  using weight = tensor<float, shape<model<D>, model<D>>>;
  using bias = tensor<float, shape<model<D>>>;

  activations x(2, 10);       // (BATCH,SEQ,D_MODEL) = (2,10,32)
  weight w_q, w_k, w_v, w_o;  // (D_MODEL,D_MODEL), x·W form
  bias b_q, b_k, b_v, b_o;    // (D_MODEL)
  randomize(x, 1.0, g);
  for (weight* w : {&w_q, &w_k, &w_v, &w_o}) randomize(*w, 1.0 / std::sqrt(double(D)), g);
  for (bias* b : {&b_q, &b_k, &b_v, &b_o}) randomize(*b, 0.1, g);

  // --- 1. The attention as an expression -----------------------------------------------
  // Each call builds a node and checks the shapes; nothing is computed yet. The nodes
  // hold x and the weights by reference, so those tensors must outlive the expression.
  const auto q = split_heads<H>(project(x, w_q, b_q));  // (B,S,D) -> (B,H,S,DK)
  const auto k = split_heads<H>(project(x, w_k, b_k));  // (B,H,S,DK)
  const auto v = split_heads<H>(project(x, w_v, b_v));  // (B,H,S,DK)
  const auto p = softmax(mask(scores(q, k), causal));   // (B,H,S,S): Q·Kᵀ/sqrt(DK), causal
  const auto y = project(merge_heads(attend(p, v)), w_o, b_o);  // (B,H,S,DK) -> (B,S,D)

  // --- 2. Evaluate it: the same expression, two evaluators, one reference ---------------
  const activations unfused_y = evaluate(y, unfused);  // (B,S,D), every step materialised
  const activations fused_y = evaluate(y, fused);      // (B,S,D), one loop nest
  const auto reference_y = evaluate_reference(y);      // (B,S,D), in double, plain loops
  std::printf("building blocks, causal, (batch, seq) = (%zu, %zu):\n", x.extent(0), x.extent(1));
  std::printf("  unfused vs reference %.2e, fused vs reference %.2e, fused vs unfused %.2e\n",
              max_rel_diff(unfused_y, reference_y), max_rel_diff(fused_y, reference_y),
              max_rel_diff(fused_y, unfused_y));
  check(max_rel_diff(unfused_y, reference_y) <= tolerance, "unfused equals the reference");
  check(max_rel_diff(fused_y, reference_y) <= tolerance, "fused equals the reference");

  // Into an existing tensor: its extents must be the expression's.
  activations out(2, 10);  // (B,S,D)
  evaluate(y, fused, out);
  check(max_rel_diff(out, fused_y) == 0, "evaluate(y, fused, out) writes the same values");

  // The module builds exactly this tree from the same weights.
  const multi_head_attention<D, H> mha(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o);
  const activations module_y = evaluate(mha.forward(x, causal), fused);
  check(max_rel_diff(module_y, fused_y) <= 1e-6,
        "multi_head_attention<32, 4>::forward is the same tree");

  // --- 3. Per-head projection: W (head<H>, model<D>, head_dim<DK>) -----------------------
  // Head h's weights as a tensor of their own: project(x, W) is (B,H,S,DK) directly.
  // Taking W[h] = columns [h*DK, (h+1)*DK) of w_q must give the stacked projection's heads.
  tensor<float, shape<head<H>, model<D>, head_dim<DK>>> w_q_heads;  // (H,D_MODEL,D_K)
  tensor<float, shape<head<H>, head_dim<DK>>> b_q_heads;            // (H,D_K)
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t d = 0; d < DK; ++d) {
      b_q_heads(h, d) = b_q(h * DK + d);
      for (std::size_t i = 0; i < D; ++i) w_q_heads(h, i, d) = w_q(i, h * DK + d);
    }
  const auto q_heads = project(x, w_q_heads, b_q_heads);  // (B,H,S,DK)
  std::printf("per-head projection W (head<4>, model<32>, head_dim<8>):\n");
  check(max_rel_diff(evaluate(q_heads, unfused), evaluate(q, unfused)) <= 1e-6,
        "project(x, W_heads, b_heads) == split_heads<4>(project(x, w_q, b_q))");
  const auto y_heads =
      project(merge_heads(attend(softmax(mask(scores(q_heads, k), causal)), v)), w_o, b_o);
  check(max_rel_diff(evaluate(y_heads, fused), reference_y) <= tolerance,
        "attention with per-head queries, fused, equals the reference of the stacked one");

  // --- 4. Narrow heads: head h projects only its slice x[..., h*DK : (h+1)*DK] ------------
  // project(split_heads<H>(x), W) with W (head<H>, model<D/H>, head_dim<DK>). It equals a
  // stacked projection by the block-diagonal matrix that has W[h] as its h-th block.
  tensor<float, shape<head<H>, model<D / H>, head_dim<DK>>> w_narrow;  // (H,D_MODEL/H,D_K)
  randomize(w_narrow, 1.0 / std::sqrt(double(D / H)), g);
  weight w_block;  // (D_MODEL,D_MODEL)
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < D / H; ++i)
      for (std::size_t d = 0; d < DK; ++d) w_block(h * (D / H) + i, h * DK + d) = w_narrow(h, i, d);
  const auto q_narrow = project(split_heads<H>(x), w_narrow);  // (B,H,S,DK)
  std::printf("narrow heads W (head<4>, model<8>, head_dim<8>) on split_heads<4>(x):\n");
  check(max_rel_diff(evaluate(q_narrow, fused),
                     evaluate(split_heads<H>(project(x, w_block)), fused)) <= 1e-6,
        "project(split_heads<4>(x), W) == split_heads<4>(project(x, block_diagonal(W)))");
  const auto y_narrow = project(merge_heads(attend(softmax(scores(q_narrow, k)), v)), w_o);
  const auto reference_narrow = evaluate_reference(y_narrow);
  check(max_rel_diff(evaluate(y_narrow, unfused), reference_narrow) <= tolerance &&
            max_rel_diff(evaluate(y_narrow, fused), reference_narrow) <= tolerance,
        "attention with narrow queries: unfused and fused equal the reference");

  std::printf("%s\n", failures ? "02_expressions: FAILED" : "02_expressions: all checks passed");
  return failures ? 1 : 0;
}
