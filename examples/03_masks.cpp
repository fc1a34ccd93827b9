// 03_masks -- the four masks and how they combine:
//   causal                 query i may attend key j iff j <= i (top-left aligned);
//                          causal_lower_right(seq_q, seq_kv): iff j <= i + seq_kv - seq_q
//   ignore_keys(padding)   padding (batch, seq_kv): non-zero ignores key j for that batch item
//   ignore_where(m)        m (seq_q, seq_kv): non-zero ignores key j for query i
//   add_to_scores(a)       a (seq_q, seq_kv) added to the scaled logits; -infinity ignores
// One polarity for every boolean mask: true (non-zero) means "ignore". A query whose keys
// are all ignored attends nothing: its weights and its output are zero, never NaN. The
// weights themselves are exported with attention_weights().
//
// It prints the weights it computes, checks each property, and exits non-zero if one does
// not hold. docs/how-to/masks.md quotes it.
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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

template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
  double m = a.size() == b.size() ? 0 : std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double x = double(a.data()[i]), y = double(b.data()[i]);
    m = std::max(m, std::isfinite(x) ? std::abs(x - y) / (1 + std::abs(y))
                                     : std::numeric_limits<double>::infinity());
  }
  return m;
}

/// Prints the weights of batch item b, head h: one row per query, one column per key.
template <class Weights>
void print_weights(const char* title, const Weights& p, std::size_t b, std::size_t h) {
  std::printf("%s (item %zu, head %zu; rows: queries, columns: keys)\n", title, b, h);
  for (std::size_t i = 0; i < p.extent(2); ++i) {
    std::printf("   ");
    for (std::size_t j = 0; j < p.extent(3); ++j) std::printf(" %.3f", double(p(b, h, i, j)));
    std::printf("\n");
  }
}

/// True when every weight of an ignored (query, key) pair is exactly zero and every row
/// that keeps a key sums to one.
template <class Weights, class Ignored>
bool weights_respect(const Weights& p, Ignored ignored) {
  for (std::size_t b = 0; b < p.extent(0); ++b)
    for (std::size_t h = 0; h < p.extent(1); ++h)
      for (std::size_t i = 0; i < p.extent(2); ++i) {
        double sum = 0;
        bool any_key = false;
        for (std::size_t j = 0; j < p.extent(3); ++j) {
          if (ignored(b, i, j) && p(b, h, i, j) != 0) return false;
          any_key = any_key || !ignored(b, i, j);
          sum += p(b, h, i, j);
        }
        if (std::abs(sum - (any_key ? 1.0 : 0.0)) > 1e-5) return false;
      }
  return true;
}

// Whether ignore_keys accepts a padding tensor of type P (bool and uint8_t only): the rules
// ignore_keys checks, without its compile error.
template <class P>
concept can_ignore_keys = argus::ignore_keys_accepts<P&>;

}  // namespace

int main() {
  using namespace argus;
  std::mt19937 g(3);

  constexpr std::size_t H = 2, DK = 4;
  const std::size_t B = 2, S = 6;
  using heads = tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>>;
  heads q(B, S), k(B, S), v(B, S);  // (BATCH,HEAD,SEQ,D_K) = (2,2,6,4)
  randomize(q, 1.0, g), randomize(k, 1.0, g), randomize(v, 1.0, g);
  const auto s = scores(q, k);  // (B,H,SEQ_Q,SEQ_KV): Q·Kᵀ/sqrt(DK)

  // --- causal: query i sees keys 0..i ---------------------------------------------------
  const auto causal_p = evaluate(softmax(mask(s, causal)), unfused);  // (B,H,S,S)
  print_weights("causal", causal_p, 0, 0);
  check(weights_respect(causal_p, [](std::size_t, std::size_t i, std::size_t j) { return j > i; }),
        "causal: weight(i, j) == 0 for every j > i, rows sum to 1");

  // --- causal_lower_right: new queries after cached keys ----------------------------------
  // The last N = 2 tokens' queries against all S keys (S - N of them cached): query i sits at
  // position S - N + i and may attend keys 0..S - N + i, so the last query sees every key.
  const std::size_t N = 2;
  heads q_new(B, N);  // (BATCH,HEAD,N,D_K): the newest tokens' queries
  randomize(q_new, 1.0, g);
  const auto lower_right_p =
      evaluate(softmax(mask(scores(q_new, k), causal_lower_right(N, S))), unfused);  // (B,H,N,S)
  print_weights("causal_lower_right(2, 6)", lower_right_p, 0, 0);
  check(weights_respect(lower_right_p,
                        [&](std::size_t, std::size_t i, std::size_t j) { return j > S - N + i; }),
        "causal_lower_right: weight(i, j) == 0 for every j > i + seq_kv - seq_q");

  // --- ignore_keys: per batch item, the padding keys -------------------------------------
  // Item 0 is right-padded (keys 4, 5 are padding), item 1 left-padded (keys 0, 1).
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(B, S);  // (BATCH,SEQ_KV)
  padding(0, 4) = padding(0, 5) = 1;
  padding(1, 0) = padding(1, 1) = 1;
  auto is_padding = [&](std::size_t b, std::size_t, std::size_t j) { return padding(b, j) != 0; };
  const auto padded_p = evaluate(softmax(mask(s, ignore_keys(padding))), unfused);
  print_weights("ignore_keys(padding)", padded_p, 1, 0);
  check(weights_respect(padded_p, is_padding), "ignore_keys: padding keys get weight 0");
  static_assert(can_ignore_keys<tensor<bool, shape<batch<>, seq<>>>>);
  static_assert(!can_ignore_keys<tensor<int, shape<batch<>, seq<>>>>);  // bool or uint8_t only

  // --- ignore_where: per (query, key) pair -------------------------------------------------
  // A local window: query i ignores the keys more than one position away.
  tensor<bool, shape<seq<>, seq<>>> far(S, S);  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < S; ++i)
    for (std::size_t j = 0; j < S; ++j) far(i, j) = (i > j ? i - j : j - i) > 1;
  const auto window_p = evaluate(softmax(mask(s, ignore_where(far))), unfused);
  print_weights("ignore_where(|i - j| > 1)", window_p, 0, 0);
  check(weights_respect(window_p,
                        [&](std::size_t, std::size_t i, std::size_t j) { return far(i, j); }),
        "ignore_where: ignored pairs get weight 0");

  // --- add_to_scores: a bias on the logits; -infinity ignores -----------------------------
  // An ALiBi-style distance penalty, and key 0 forbidden to the last query.
  tensor<float, shape<seq<>, seq<>>> bias(S, S);  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < S; ++i)
    for (std::size_t j = 0; j < S; ++j) bias(i, j) = -0.5f * float(i > j ? i - j : j - i);
  bias(S - 1, 0) = -std::numeric_limits<float>::infinity();
  const auto biased = softmax(mask(s, add_to_scores(bias)));
  const auto biased_p = evaluate(biased, unfused);
  check(max_rel_diff(biased_p, evaluate_reference(biased)) <= 1e-5 && biased_p(0, 0, S - 1, 0) == 0,
        "add_to_scores: softmax(s + bias) as the reference computes it; -inf gives weight 0");

  // --- Combined: masks compose; one of each kind stays one fused loop nest ----------------
  // mask(s, m1, m2, ...) == mask(mask(s, m1), m2, ...): a key is ignored if any mask
  // ignores it, and additive terms add.
  const auto all_masks = attend(
      softmax(mask(s, causal, ignore_keys(padding), ignore_where(far), add_to_scores(bias))), v);
  const auto all_unfused = evaluate(all_masks, unfused);  // (B,H,SEQ_Q,D_K)
  const auto all_fused = evaluate(all_masks, fused);
  std::printf(
      "combined causal + ignore_keys + ignore_where + add_to_scores: fused vs unfused %.1e\n",
      max_rel_diff(all_fused, all_unfused));
  check(max_rel_diff(all_fused, all_unfused) <= 1e-5 &&
            max_rel_diff(all_unfused, evaluate_reference(all_masks)) <= 1e-5,
        "combined masks: fused == unfused == reference");
  std::printf("%s", explain(all_masks, fused).to_string().c_str());

  // --- A query with no key left gets zeros, not NaN ---------------------------------------
  // Causal on the left-padded item 1: queries 0 and 1 may only see keys 0..1, which are
  // padding. Their weights and their outputs are exactly zero, fused and unfused.
  const auto left = attend(softmax(mask(s, causal, ignore_keys(padding))), v);
  const auto left_p = evaluate(attention_weights(left), unfused);
  print_weights("causal + ignore_keys(padding)", left_p, 1, 0);
  bool zeros = true;
  const auto left_u = evaluate(left, unfused), left_f = evaluate(left, fused);  // (B,H,SEQ_Q,D_K)
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t d = 0; d < DK; ++d)
        zeros = zeros && left_u(1, h, i, d) == 0 && left_f(1, h, i, d) == 0;
  check(
      zeros && weights_respect(left_p, [&](std::size_t b, std::size_t i,
                                           std::size_t j) { return j > i || padding(b, j) != 0; }),
      "fully masked rows: weights 0 and output 0 (not NaN), fused and unfused");

  // --- Attention weights of the module ----------------------------------------------------
  // attention_weights(y) is the softmax sub-expression of y: (batch, head, seq_q, seq_kv).
  multi_head_attention<8, H> mha;  // d_model 8, 2 heads of width 4
  for (auto* w : {&mha.w_q, &mha.w_k, &mha.w_v, &mha.w_o}) randomize(*w, 0.5, g);
  tensor<float, shape<batch<>, seq<>, model<8>>> x(B, S);  // (BATCH,SEQ,D_MODEL)
  randomize(x, 1.0, g);
  const auto y = mha.forward(x, causal, ignore_keys(padding));
  const auto weights = evaluate(attention_weights(y), unfused);  // (B,H,SEQ_Q,SEQ_KV)
  print_weights("multi_head_attention<8, 2>, causal + padding", weights, 0, 1);
  check(weights_respect(weights, [&](std::size_t b, std::size_t i,
                                     std::size_t j) { return j > i || padding(b, j) != 0; }),
        "attention_weights(mha.forward(x, causal, ignore_keys(padding))) respects both masks");

  // --- A mask whose run-time extents do not fit the scores throws shape_error -------------
  tensor<std::uint8_t, shape<batch<>, seq<>>> long_padding(B, S + 1);  // (BATCH,SEQ_KV + 1)
  try {
    const auto bad = mask(s, ignore_keys(long_padding));
    (void)bad;
    check(false, "a padding mask of 7 keys on scores of 6 keys throws shape_error");
  } catch (const shape_error& e) {
    std::printf("  shape_error: %s\n", e.what());
    check(true, "a padding mask of 7 keys on scores of 6 keys throws shape_error");
  }

  std::printf("%s\n", failures ? "03_masks: FAILED" : "03_masks: all checks passed");
  return failures ? 1 : 0;
}
