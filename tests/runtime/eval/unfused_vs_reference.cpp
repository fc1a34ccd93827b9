// The unfused evaluator against the double-precision reference, on every expression form
// (stacked, per-head and narrow projections, grouped-query attention, d_k != d_v,
// cross-attention, every mask kind) and on randomised run-time lengths.
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>

using namespace argus;

namespace {

using test::max_rel_diff;
using test::randomize;
using test::randomize_module;
using test::rng;

template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 2e-5 : 1e-12;

template <class E>
void check_against_reference(const E& e) {
  using T = typename E::value_type;
  const auto ref = evaluate_reference(e);
  const auto got = evaluate(e, unfused);
  BOOST_TEST(max_rel_diff(got, ref) <= tolerance<T>);
}

}  // namespace

template <class T, std::size_t D, std::size_t H, std::size_t G, std::size_t DK, std::size_t DV>
struct cfg {
  using value_type = T;
  static constexpr std::size_t d_model = D, heads = H, kv_heads = G, d_k = DK, d_v = DV;
};
using module_configs = std::tuple<cfg<float, 16, 4, 4, 4, 4>, cfg<double, 16, 4, 4, 4, 4>,
                                  cfg<float, 64, 8, 2, 8, 8>, cfg<float, 24, 3, 1, 16, 5>,
                                  cfg<double, 32, 4, 2, 12, 20>, cfg<float, 128, 2, 2, 64, 64>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(module_with_random_lengths_and_masks, C, module_configs) {
  using T = typename C::value_type;
  using mha_t =
      multi_head_attention<C::d_model, C::heads,
                           mha_options{.kv_heads = C::kv_heads, .d_k = C::d_k, .d_v = C::d_v}, T>;
  mha_t mha;
  const double ws = 1.0 / std::sqrt(double(C::d_model));
  randomize_module(mha, ws, ws, 0.1);
  std::uniform_int_distribution<std::size_t> len(1, 40), bat(1, 3);
  for (int trial = 0; trial < 4; ++trial) {
    const std::size_t b = bat(rng()), sq = len(rng()), skv = len(rng());
    tensor<T, shape<batch<>, seq<>, model<C::d_model>>> xq(b, sq), xkv(b, skv);  // (B,SEQ,D_MODEL)
    randomize(xq), randomize(xkv);
    tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, skv);  // (B,SEQ_KV)
    for (auto& p : pad) p = std::bernoulli_distribution(0.3)(rng());
    pad(0, 0) = 1;  // at least one ignored key; with seq_kv == 1, a fully masked row
    tensor<bool, shape<seq<>, seq<>>> pairs(sq, skv);  // (SEQ_Q,SEQ_KV)
    for (auto& p : pairs) p = std::bernoulli_distribution(0.2)(rng());
    tensor<T, shape<seq<>, seq<>>> add(sq, skv);  // (SEQ_Q,SEQ_KV)
    randomize(add);
    BOOST_TEST_CONTEXT("batch " << b << ", seq_q " << sq << ", seq_kv " << skv) {
      check_against_reference(mha.forward(xq, xkv, xkv));
      check_against_reference(mha.forward(xq, xkv, xkv, ignore_keys(pad)));
      check_against_reference(mha.forward(xq, xkv, xkv, ignore_where(pairs), add_to_scores(add)));
      check_against_reference(attention_weights(mha.forward(xq, xkv, xkv, ignore_keys(pad))));
      if (sq == skv) check_against_reference(mha.forward(xq, causal));
    }
  }
}

BOOST_AUTO_TEST_CASE(per_head_and_narrow_projections) {
  constexpr std::size_t D = 32, H = 4, DK = 8;
  tensor<float, shape<batch<>, seq<>, model<D>>> x(2, 11);           // (B,SEQ,D_MODEL)
  tensor<float, shape<head<H>, model<D>, head_dim<DK>>> wq, wk, wv;  // (H,D_MODEL,D_K)
  tensor<float, shape<head<H>, model<D / H>, head_dim<DK>>> nq;      // (H,D_MODEL/H,D_K): narrow
  tensor<float, shape<head<H>, head_dim<DK>>> bq;                    // (H,D_K)
  tensor<float, shape<model<H * DK>, model<D>>> wo;                  // (H*D_K,D_MODEL)
  for (auto* t : {&wq, &wk, &wv}) randomize(*t, 0.2);
  randomize(nq, 0.3), randomize(bq, 0.1), randomize(wo, 0.2), randomize(x);
  const auto q = project(x, wq, bq);
  const auto k = project(x, wk);
  const auto v = project(x, wv);
  check_against_reference(project(merge_heads(attend(softmax(scores(q, k)), v)), wo));
  const auto qn = project(split_heads<H>(x), nq);  // each head sees only its slice of x
  check_against_reference(project(merge_heads(attend(softmax(scores(qn, k)), v)), wo));
}

BOOST_AUTO_TEST_CASE(fully_masked_rows_are_zero_and_large_logits_stay_finite) {
  tensor<float, shape<batch<1>, head<2>, seq<3>, head_dim<4>>> q, k, v;  // (1,2,3,4)
  randomize(q, 1e3), randomize(k, 1e3), randomize(v);                    // logits ~ ±1e6
  tensor<std::uint8_t, shape<batch<1>, seq<3>>> all;                     // (1,SEQ_KV)
  all.fill(1);
  const auto p = evaluate(softmax(mask(scores(q, k), ignore_keys(all))), unfused);
  for (float x : p) BOOST_TEST(x == 0.0f);
  const auto o = evaluate(attend(softmax(mask(scores(q, k), ignore_keys(all))), v), unfused);
  for (float x : o) BOOST_TEST(x == 0.0f);
  const auto big = evaluate(softmax(scores(q, k)), unfused);
  for (float x : big) BOOST_TEST(std::isfinite(x));
  check_against_reference(attend(softmax(scores(q, k)), v));
}

BOOST_AUTO_TEST_CASE(single_positions_and_single_head_groups) {
  // One key/value head and one position make the split layout row-major already: the split
  // must still own its memory (a dangling view here once returned garbage).
  multi_head_attention<32, 4, mha_options{.kv_heads = 1, .d_k = 12, .d_v = 20}> mha;
  randomize_module(mha, 0.35, 0.18, 0.1);
  for (std::size_t sq : {1u, 53u})
    for (std::size_t skv : {1u, 2u}) {
      tensor<float, shape<batch<>, seq<>, model<32>>> xq(1, sq), xkv(1, skv);  // (1,SEQ,D_MODEL)
      randomize(xq), randomize(xkv);
      BOOST_TEST_CONTEXT("seq_q " << sq << ", seq_kv " << skv) {
        check_against_reference(mha.forward(xq, xkv, xkv));
        const auto f = evaluate(mha.forward(xq, xkv, xkv), fused);
        BOOST_TEST(max_rel_diff(f, evaluate_reference(mha.forward(xq, xkv, xkv))) <=
                   tolerance<float>);
      }
    }
}
