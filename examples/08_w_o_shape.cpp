// 08_w_o_shape -- what shape must W_o have when h·d_v != d_model?
// merge_heads puts the h heads' d_v-wide outputs side by side: h·d_v features. W_o maps them
// back to d_model, so it is (h·d_v, d_model): square only when h·d_v == d_model.
//   - the module, multi_head_attention<64, 4, {.d_k = 16, .d_v = 8}>: W_o is (4·8, 64) = (32, 64);
//   - the same with narrow heads from the building blocks, each head projecting its 16-wide
//     slice of x to d_k = 16 and d_v = 8: merge_heads gives 32 features, W_o is (32, 64);
//   - a (64, 64) W_o, the square one the paper's d_v = d_model/h would need, does not compile:
//     tests/compile_fail/w_o_rows_equal_heads_times_d_v_narrow_heads.cpp is that mistake, and
//     the checks below are the same rules, tested in-process.
//
// Exits non-zero if a check fails. docs/tutorial/questions.md quotes it.
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>

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

template <class Tensor>
void print_shape(const char* name, const Tensor& t) {
  std::printf("  %-5s (%zu, %zu)\n", name, t.extent(0), t.extent(1));
}

template <std::size_t Rows, std::size_t Cols>
using weight = argus::tensor<float, argus::shape<argus::model<Rows>, argus::model<Cols>>>;

// Whether project(x, w) compiles: the rules project checks, without its compile error.
template <class X, class W>
concept projectable = argus::project_accepts<const X&, const W&>;

}  // namespace

int main() {
  using namespace argus;
  std::mt19937 g(8);

  // --- 1. The module: d_model 64, 4 heads, d_k 16, d_v 8 ----------------------------------
  using module_t = multi_head_attention<64, 4, mha_options{.d_k = 16, .d_v = 8, .bias = false}>;
  module_t mha;
  std::printf("multi_head_attention<64, 4, {.d_k = 16, .d_v = 8}>: h·d_v = %zu, d_model = %zu\n",
              module_t::heads * module_t::d_v, module_t::d_model);
  print_shape("W_q", mha.w_q);
  print_shape("W_k", mha.w_k);
  print_shape("W_v", mha.w_v);
  print_shape("W_o", mha.w_o);
  static_assert(std::is_same_v<decltype(module_t::w_o), weight<4 * 8, 64>>);  // (h·d_v, d_model)

  // The constructor from your weights takes a (32, 64) W_o and rejects a (64, 64) one.
  weight<64, 64> w_q;  // (D_MODEL,H*D_K)
  weight<64, 32> w_v;  // (D_MODEL,H*D_V)
  weight<32, 64> w_o;  // (H*D_V,D_MODEL)
  const weight<64, 64>& w_k = w_q;
  randomize(w_q, 0.125, g), randomize(w_v, 0.125, g), randomize(w_o, 0.18, g);
  constexpr bool takes_32_by_64 = module_t::accepts_weights<weight<64, 64>&, const weight<64, 64>&,
                                                            weight<64, 32>&, weight<32, 64>&>;
  constexpr bool takes_64_by_64 = module_t::accepts_weights<weight<64, 64>&, const weight<64, 64>&,
                                                            weight<64, 32>&, weight<64, 64>&>;
  check(takes_32_by_64 && !takes_64_by_64,
        "the module takes W_o (32, 64) and rejects (64, 64): w_o_rows_equal_heads_times_d_v<64, 4, "
        "8>");
  const module_t from_weights(w_q, w_k, w_v, w_o);

  tensor<float, shape<batch<>, seq<>, model<64>>> x(2, 7);  // (BATCH,SEQ,D_MODEL)
  randomize(x, 1.0, g);
  const auto y = from_weights.forward(x, causal);
  const auto y_fused = evaluate(y, fused);  // (2,7,64)
  std::printf("  forward(x): (%zu, %zu, %zu)\n", y_fused.extent(0), y_fused.extent(1),
              y_fused.extent(2));
  check(max_rel_diff(y_fused, evaluate_reference(y)) <= 1e-5,
        "the module, fused, equals the reference");

  // --- 2. Narrow heads from the building blocks -------------------------------------------
  // Head h projects its slice x[..., 16h, 16h+16) to a 16-wide query and key and an 8-wide
  // value; merge_heads then gives 4·8 = 32 features.
  tensor<float, shape<head<4>, model<16>, head_dim<16>>> wq_narrow, wk_narrow;  // (H,D_MODEL/H,D_K)
  tensor<float, shape<head<4>, model<16>, head_dim<8>>> wv_narrow;              // (H,D_MODEL/H,D_V)
  randomize(wq_narrow, 0.25, g), randomize(wk_narrow, 0.25, g), randomize(wv_narrow, 0.25, g);
  const auto xs = split_heads<4>(x);  // (B,H,SEQ,16)
  const auto heads = merge_heads(
      attend(softmax(mask(scores(project(xs, wq_narrow), project(xs, wk_narrow)), causal)),
             project(xs, wv_narrow)));  // (B,SEQ,H*D_V)
  using merged_shape = typename std::remove_cvref_t<decltype(heads)>::shape_type;
  std::printf("narrow heads, d_k 16, d_v 8: merge_heads gives (%zu, %zu, %zu)\n",
              heads.shape().extent(0), heads.shape().extent(1), heads.shape().extent(2));
  static_assert(static_extent_v<merged_shape, 2> == 32);
  const auto y_narrow = project(heads, w_o);  // (B,SEQ,D_MODEL)
  check(max_rel_diff(evaluate(y_narrow, fused), evaluate_reference(y_narrow)) <= 1e-5,
        "project(merge_heads(...), W_o (32, 64)), fused, equals the reference");
  constexpr bool narrow_takes_64_by_64 = projectable<decltype(heads), weight<64, 64>>;
  check(projectable<decltype(heads), weight<32, 64>> && !narrow_takes_64_by_64,
        "project(merge_heads(...), W_o) takes (32, 64), rejects (64, 64): "
        "input_width_equals_weight_rows<32, 64>");

  std::printf("%s\n", failures ? "08_w_o_shape: FAILED" : "08_w_o_shape: all checks passed");
  return failures ? 1 : 0;
}
