// tests/support/fused_law.hpp -- test support: the law of every fused pattern, evaluated
// fused, an expression equals its unfused evaluation within tolerance (on 1-3 threads, into a
// fresh result and into a caller's tensor), and its run on multi_head_attention modules of a
// static configuration with random run-time lengths and masks. Shared by
// tests/runtime/eval/fused_vs_unfused.cpp (the configurations TSan runs too) and
// fused_vs_unfused_forms.cpp (the others, and every other form): the TSan stage compiles only
// what it runs.
#pragma once

#include "random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <type_traits>

namespace argus::test {

template <class T>
constexpr double law_tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;

/// The law's verdicts on one thread count (one function for every expression type): fused
/// against unfused within tol, fused into out the same bits as fused, unfused into out within
/// tol of unfused.
inline void check_law(std::size_t threads, double tol, double fused_vs_unfused, double fused_into,
                      double unfused_into) {
  BOOST_TEST(fused_vs_unfused <= tol,
             "threads " << threads << ": max relative difference " << fused_vs_unfused);
  BOOST_TEST(fused_into == 0.0, "threads " << threads << ": fused into out");
  BOOST_TEST(unfused_into <= tol, "threads " << threads << ": unfused into out");
}

/// The law on expression e, on 1, 2 and 3 threads.
template <class E>
void law(const E& e) {
  using T = typename E::value_type;
  const auto u = evaluate(e, unfused);
  // Into a caller's tensor the root's step writes there directly where it can.
  tensor<T, typename E::shape_type> into(e.shape());
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    const auto f = evaluate(e, fused);
    const double d = max_rel_diff(f, u);
    evaluate(e, fused, into);
    const double d_fused_into = max_rel_diff(into, f);
    evaluate(e, unfused, into);
    check_law(threads, law_tolerance<T>, d, d_fused_into, max_rel_diff(into, u));
  }
  set_num_threads(0);
}

/// A module configuration: value type, d_model, heads, kv_heads, d_k, d_v.
template <class T, std::size_t D, std::size_t H, std::size_t G, std::size_t DK, std::size_t DV>
struct cfg {
  using value_type = T;
  static constexpr std::size_t d_model = D, heads = H, kv_heads = G, d_k = DK, d_v = DV;
};

/// The law on the module of configuration C: three random problems (batch 1-2, lengths
/// 1-150), each as cross-attention without masks, with padding, with pair, additive and
/// padding masks, and as causal self-attention with and without a pair mask.
template <class C>
void module_forward_law() {
  using T = typename C::value_type;
  using mha_t =
      multi_head_attention<C::d_model, C::heads,
                           mha_options{.kv_heads = C::kv_heads, .d_k = C::d_k, .d_v = C::d_v}, T>;
  mha_t mha;
  const double ws = 1.0 / std::sqrt(double(C::d_model));
  randomize_module(mha, 2 * ws, ws, 0.1);
  std::uniform_int_distribution<std::size_t> len(1, 150), bat(1, 2);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t b = bat(rng()), sq = len(rng()), skv = len(rng());
    tensor<T, shape<batch<>, seq<>, model<C::d_model>>> xq(b, sq), xkv(b, skv);  // (B,SEQ,D_MODEL)
    randomize(xq), randomize(xkv);
    tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, skv);  // (B,SEQ_KV)
    for (auto& p : pad) p = std::bernoulli_distribution(0.3)(rng());
    pad(0, skv - 1) = 0;
    tensor<bool, shape<seq<>, seq<>>> pairs(sq, skv);  // (SEQ_Q,SEQ_KV)
    for (auto& p : pairs) p = std::bernoulli_distribution(0.25)(rng());
    tensor<T, shape<seq<>, seq<>>> add(sq, skv);  // (SEQ_Q,SEQ_KV)
    randomize(add);
    tensor<bool, shape<seq<>, seq<>>> self_pairs(sq, sq);  // (SEQ_Q,SEQ_Q)
    for (auto& p : self_pairs) p = std::bernoulli_distribution(0.25)(rng());
    BOOST_TEST_CONTEXT("batch " << b << ", seq_q " << sq << ", seq_kv " << skv) {
      law(mha.forward(xq, xkv, xkv));
      law(mha.forward(xq, xkv, xkv, ignore_keys(pad)));
      law(mha.forward(xq, xkv, xkv, ignore_where(pairs), add_to_scores(add), ignore_keys(pad)));
      law(mha.forward(xq, causal));
      law(mha.forward(xq, causal, ignore_where(self_pairs)));
    }
  }
}

}  // namespace argus::test
