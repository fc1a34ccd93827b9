// 04_attention -- the module, multi_head_attention<DModel, Heads, mha_options, T>:
//   - grouped-query attention (kv_heads < heads) with the default d_k = d_model / heads;
//   - a cross-attention module with kdim/vdim (keys and values of other widths than the
//     queries) and d_k != d_v, constructed from the user's own weight and bias tensors, on
//     a memory whose length is known only at run time;
//   - explain(): the evaluation plan of both policies;
//   - argus::shape_error for run-time extents that do not fit;
//   - configurations that cannot exist are compile errors.
//
// It prints the plans and the errors, checks fused == unfused == reference, and exits
// non-zero if a check fails. docs/how-to/grouped_query_and_cross_attention.md quotes it.
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <type_traits>

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

// Whether multi_head_attention<DModel, Heads, O> is a type: its requires-clause holds.
template <std::size_t DModel, std::size_t Heads, argus::mha_options O = argus::mha_options{}>
concept valid_module = requires {
  typename argus::multi_head_attention<DModel, Heads, O>;
};

}  // namespace

int main() {
  using namespace argus;
  std::mt19937 g(2024);

  // --- 1. Grouped-query attention: 8 query heads share 2 key/value heads ------------------
  // Query heads 0-3 read key/value head 0, heads 4-7 key/value head 1. d_k = 64 / 8 = 8,
  // so W_k and W_v are (64, 2·8): a quarter of W_q's columns.
  using gqa_t = multi_head_attention<64, 8, mha_options{.kv_heads = 2}>;
  static_assert(gqa_t::d_k == 8 && gqa_t::d_v == 8 && gqa_t::kv_heads == 2);
  static_assert(std::is_same_v<decltype(gqa_t::w_k), tensor<float, shape<model<64>, model<16>>>>);
  gqa_t gqa;  // weights zero: fill them
  randomize(gqa.w_q, 0.2, g), randomize(gqa.w_k, 0.2, g), randomize(gqa.w_v, 0.2, g);
  randomize(gqa.w_o, 0.2, g), randomize(gqa.b_q, 0.1, g), randomize(gqa.b_k, 0.1, g);
  randomize(gqa.b_v, 0.1, g), randomize(gqa.b_o, 0.1, g);

  tensor<float, shape<batch<>, seq<>, model<64>>> tokens(2, 12);  // (BATCH,SEQ,D_MODEL)
  randomize(tokens, 1.0, g);
  const auto y_gqa = gqa.forward(tokens, causal);  // self-attention
  const auto gqa_fused = evaluate(y_gqa, fused);   // (B,SEQ,D_MODEL)
  std::printf("grouped-query attention, 8 query heads over 2 key/value heads, causal:\n");
  check(max_rel_diff(gqa_fused, evaluate(y_gqa, unfused)) <= 1e-5 &&
            max_rel_diff(gqa_fused, evaluate_reference(y_gqa)) <= 1e-5,
        "fused == unfused == reference");

  // --- 2. Cross-attention with kdim, vdim and d_k != d_v, from the user's weights ---------
  // Queries are 32 wide (d_model); keys 24 wide (kdim), values 40 wide (vdim). 4 query heads
  // of d_k = 16 over 2 key/value heads; values have d_v = 8 per head, so merge_heads gives
  // 4·8 = 32 features and W_o is (32, 32).
  constexpr mha_options cross{.kv_heads = 2, .d_k = 16, .d_v = 8, .kdim = 24, .vdim = 40};
  using cross_t = multi_head_attention<32, 4, cross>;
  tensor<float, shape<model<32>, model<64>>> w_q;  // (D_MODEL,H*D_K)    x_q·W_q
  tensor<float, shape<model<24>, model<32>>> w_k;  // (KDIM,G*D_K)       x_k·W_k
  tensor<float, shape<model<40>, model<16>>> w_v;  // (VDIM,G*D_V)       x_v·W_v
  tensor<float, shape<model<32>, model<32>>> w_o;  // (H*D_V,D_MODEL)    heads·W_o
  tensor<float, shape<model<64>>> b_q;             // (H*D_K)
  tensor<float, shape<model<32>>> b_k;             // (G*D_K)
  tensor<float, shape<model<16>>> b_v;             // (G*D_V)
  tensor<float, shape<model<32>>> b_o;             // (D_MODEL)
  randomize(w_q, 0.2, g), randomize(w_k, 0.2, g), randomize(w_v, 0.2, g), randomize(w_o, 0.2, g);
  randomize(b_q, 0.1, g), randomize(b_k, 0.1, g), randomize(b_v, 0.1, g), randomize(b_o, 0.1, g);
  // The module copies the weights: w_q... may go out of scope afterwards. A weight of the
  // wrong extents is a compile error naming the relation, e.g. w_k_rows_equal_kdim<32, 24>.
  const cross_t decoder(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o);

  // A batch of 2 queries of 5 tokens attends a memory whose length comes at run time.
  const std::size_t memory_length = 9;
  tensor<float, shape<batch<>, seq<>, model<32>>> x(2, 5);                 // (BATCH,SEQ_Q,D_MODEL)
  tensor<float, shape<batch<>, seq<>, model<24>>> keys(2, memory_length);  // (BATCH,SEQ_KV,KDIM)
  tensor<float, shape<batch<>, seq<>, model<40>>> values(2, memory_length);  // (BATCH,SEQ_KV,VDIM)
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(2, memory_length);     // (BATCH,SEQ_KV)
  randomize(x, 1.0, g), randomize(keys, 1.0, g), randomize(values, 1.0, g);
  padding(1, 7) = padding(1, 8) = 1;  // item 1's memory is 7 tokens long
  const auto y = decoder.forward(x, keys, values, ignore_keys(padding));
  const tensor<float, shape<batch<>, seq<>, model<32>>> out = evaluate(y, fused);  // (2,5,32)
  std::printf("cross-attention, d_model 32, kdim 24, vdim 40, d_k 16, d_v 8, memory of %zu:\n",
              memory_length);
  check(out.extent(0) == 2 && out.extent(1) == 5 && out.extent(2) == 32,
        "the output is (batch, seq_q, d_model) = (2, 5, 32)");
  check(max_rel_diff(out, evaluate(y, unfused)) <= 1e-5 &&
            max_rel_diff(out, evaluate_reference(y)) <= 1e-5,
        "fused == unfused == reference");

  // --- 3. explain(): what each policy runs and what it materialises ----------------------
  const plan unfused_plan = explain(y, unfused);
  const plan fused_plan = explain(y, fused);
  std::printf("%s%s", unfused_plan.to_string().c_str(), fused_plan.to_string().c_str());
  check(fused_plan.materialised_bytes() < unfused_plan.materialised_bytes(),
        "the fused plan materialises less: no scores, no split or merge copies");

  // --- 4. Run-time extents that do not fit throw argus::shape_error -----------------------
  // Static extents are checked at compile time; run-time ones when the expression is built
  // (or evaluated into a tensor), before anything is computed or written.
  tensor<float, shape<batch<>, seq<>, model<40>>> short_values(2, memory_length - 1);
  try {
    const auto bad = decoder.forward(x, keys, short_values);
    (void)bad;
    check(false, "keys of 9 and values of 8 throw shape_error");
  } catch (const shape_error& e) {
    std::printf("  shape_error: %s\n", e.what());
    check(true, "keys of 9 and values of 8 throw shape_error");
  }
  tensor<float, shape<batch<>, seq<>, model<32>>> wrong(2, 6);  // seq 6, not 5
  wrong.fill(7.0f);
  try {
    evaluate(y, fused, wrong);
    check(false, "evaluating into a (2, 6, 32) tensor throws shape_error");
  } catch (const shape_error& e) {
    std::printf("  shape_error: %s\n", e.what());
    check(std::all_of(wrong.begin(), wrong.end(), [](float v) { return v == 7.0f; }),
          "evaluating into a (2, 6, 32) tensor throws shape_error and leaves it untouched");
  }

  // --- 5. Options and configurations that cannot exist -------------------------------------
  using no_bias_t = multi_head_attention<32, 4, mha_options{.bias = false}>;
  static_assert(!no_bias_t::has_bias && no_bias_t::d_k == 8);
  static_assert(valid_module<512, 8>);
  static_assert(!valid_module<512, 7>);                              // heads_divide_d_model<512, 7>
  static_assert(!valid_module<512, 8, mha_options{.kv_heads = 3}>);  // kv_heads_divide_heads<8, 3>
  static_assert(valid_module<512, 7, mha_options{.d_k = 64}>);  // an explicit d_k lifts the first
  std::printf("  multi_head_attention<512, 7> does not compile: heads_divide_d_model<512, 7>\n");

  std::printf("%s\n", failures ? "04_attention: FAILED" : "04_attention: all checks passed");
  return failures ? 1 : 0;
}
