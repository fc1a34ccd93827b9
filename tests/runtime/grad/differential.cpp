// Differential test of training: forward_for_training and backward, fused and unfused, on
// random attention problems -- run-time lengths 1..400 (across the fused backward's 64-query
// and 256-key tiles), batch 1..2, the head configurations below (grouped-query, d_k != d_v,
// d = 128; float), three mask chains at random densities or in the patterns
// of padded batches and packed documents (fully masked rows and items included), dropout in
// a third of the cases, and values drawn normal, with large logits, with exact ties,
// denormal, and with NaN/Inf placed in Q, K, V, dO and the rows of padded keys -- against
// the rules of docs/reference/semantics.md (1-9) computed in double. The output, dQ, dK and
// dV must agree with the rules on which elements are finite and, where they are, lie within
// 4 times a per-element bound that follows the arithmetic of the value type
// (tests/support/grad_agreement.hpp, docs/reliability.md). The fuzzer
// tests/fuzz/gradient_fuzzer.cpp holds the same calls to the same rules on fuzzed inputs;
// this test reaches realistic widths and lengths with ordinary values, where the bound is
// tight (about 1e-5 relative in float), so that it catches a loss of precision too.
//
//   ARGUS_GRAD_DIFF_CASES=2000 ./unit.grad.differential   long mode (default 60 cases)
//   ARGUS_GRAD_DIFF_SEED=<seed> ./unit.grad.differential  replays one case, as printed on
//                                                         failure (--log_level=message: what
//                                                         it drew)
#include "../../support/grad_agreement.hpp"
#include "../../support/random_cases.hpp"
#include <argus/argus.hpp>
#include <argus/grad/training.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

using namespace argus;

namespace {

using test::case_report;
using test::cfg;
using test::values;
const char* name(values v) { return test::name(v, "logits of std ~100"); }

// The paper's heads, grouped-query with d_k != d_v, and d = 128, in float
// (unit.grad.bad_values holds double to the rules within 1e-9).
using configs =
    std::tuple<cfg<float, 8, 8, 64, 64>, cfg<float, 4, 2, 16, 24>, cfg<float, 2, 2, 128, 128>>;

template <class C>
void run_case(std::mt19937_64& g, case_report& rep) {
  using T = typename C::value_type;
  using q_shape = shape<batch<>, head<C::heads>, seq<>, head_dim<C::d_k>>;
  using k_shape = shape<batch<>, head<C::kv_heads>, seq<>, head_dim<C::d_k>>;
  using v_shape = shape<batch<>, head<C::kv_heads>, seq<>, head_dim<C::d_v>>;
  using o_shape = shape<batch<>, head<C::heads>, seq<>, head_dim<C::d_v>>;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto uniform = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(g);
  };
  auto chance = [&](double p) { return unit(g) < p; };

  // Extents: anywhere in 1..400, a fifth decode-shaped; the work is capped so that the double
  // rules stay quick (halving the longer length).
  const std::size_t b = uniform(1, 2);
  std::size_t sq = uniform(1, 400), skv = uniform(1, 400);
  if (chance(0.2)) sq = uniform(1, 16), skv = uniform(256, 400);
  while (double(b) * C::heads * double(sq) * double(skv) * (C::d_k + C::d_v) > 2e7)
    (sq > skv ? sq : skv) /= 2;
  const values kind = values(uniform(0, 3));
  const int form = int(uniform(0, 2));  // 0 no mask, 1 causal + padding, 2 all four
  // The causal mask: top-left, bottom-right, or at a random offset (past either end too); in
  // a third of the cases with a sliding window (a single key, or up to a little past seq_kv).
  causal_mask diagonal = std::array{causal, causal_lower_right(sq, skv),
                                    causal_from(std::ptrdiff_t(uniform(0, sq + skv + 4)) -
                                                std::ptrdiff_t(sq) - 2)}[uniform(0, 2)];
  if (chance(1.0 / 3)) diagonal = diagonal.windowed(chance(0.2) ? 1 : uniform(1, skv + 8));
  const std::size_t threads = uniform(1, 3);
  const double rate = chance(1.0 / 3) ? std::array{0.1, 0.5, 0.9}[uniform(0, 2)] : 0.0;
  const std::uint64_t seed = g();
  rep.text << "config (" << (std::is_same_v<T, float> ? "float" : "double") << ", heads "
           << C::heads << ", kv_heads " << C::kv_heads << ", d_k " << C::d_k << ", d_v " << C::d_v
           << "), batch " << b << ", seq_q " << sq << ", seq_kv " << skv << ", values "
           << name(kind) << ", masks "
           << (form == 0   ? "none"
               : form == 1 ? "causal + ignore_keys"
                           : "all four")
           << (form >= 1 ? ", causal offset " + std::to_string(diagonal.offset) : "")
           << (form >= 1 && diagonal.window != causal_mask::every_key
                   ? ", window " + std::to_string(diagonal.window)
                   : "")
           << ", dropout " << rate << ", " << threads << " threads";

  tensor<T, q_shape> q(b, sq);                                        // (B,H,SEQ_Q,D_K)
  tensor<T, k_shape> k(b, skv);                                       // (B,G,SEQ_KV,D_K)
  tensor<T, v_shape> v(b, skv);                                       // (B,G,SEQ_KV,D_V)
  tensor<T, o_shape> dout(b, sq);                                     // (B,H,SEQ_Q,D_V)
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, skv);            // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs(sq, skv);                   // (SEQ_Q,SEQ_KV)
  tensor<T, shape<seq<>, seq<>>> add(sq, skv);                        // (SEQ_Q,SEQ_KV)
  const double qk_scale = kind == values::large_logits ? 10.0 : 1.0;  // logit std ~ scale^2
  auto fill = [&](auto& t, double s) {
    for (auto& x : t) x = kind == values::ties ? T(double(uniform(0, 2)) - 1.0) : T(s * normal(g));
  };
  fill(q, qk_scale), fill(k, qk_scale), fill(v, 1.0), fill(dout, 1.0);
  if (kind == values::ties)  // duplicate key rows too: equal logits across keys
    for (std::size_t x = 0; x + C::d_k < k.size(); x += 2 * C::d_k)
      std::copy_n(k.data() + x, C::d_k, k.data() + x + C::d_k);
  if (kind == values::denormal) {
    const double tiny = std::numeric_limits<T>::min();  // below: denormal
    for (auto& x : v) x = T(x * tiny * 1e-3);
    for (auto& x : dout)
      if (chance(0.3)) x = T(x * tiny * 1e-2);
  }
  // Padding at a random density or, as in a padded batch, past each item's length; pairs at
  // a random density or, as in packed documents, across documents (64 positions long on
  // average): whole tiles of either, which the fused passes skip, and tiles either ignores
  // none of.
  const std::size_t pad_form = uniform(0, 3), pair_form = uniform(0, 3);
  const double pad_densities[] = {0.0, 0.1, 0.5}, pair_densities[] = {0.0, 0.2, 0.9};
  for (std::size_t bb = 0; bb < b; ++bb) {
    const std::size_t length = uniform(0, skv);
    for (std::size_t j = 0; j < skv; ++j)
      pad(bb, j) = (pad_form == 3 ? j >= length : chance(pad_densities[pad_form])) ? 1 : 0;
  }
  if (chance(0.1)) std::fill_n(pad.data(), skv, std::uint8_t(1));  // item 0 fully padded
  std::vector<std::size_t> document(std::max(sq, skv));
  for (std::size_t x = 1; x < document.size(); ++x)
    document[x] = document[x - 1] + (chance(1.0 / 64) ? 1 : 0);
  for (std::size_t i = 0; i < sq; ++i)
    for (std::size_t j = 0; j < skv; ++j)
      pairs(i, j) = pair_form == 3 ? document[i] != document[j] : chance(pair_densities[pair_form]);
  for (auto& x : add) x = chance(0.05) ? -std::numeric_limits<T>::infinity() : T(normal(g));

  // Bad values in a third of the cases: NaN/Inf anywhere in Q, K, V or dO, and, under
  // padding, in the K and V rows of padded keys.
  const T bad[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                   -std::numeric_limits<T>::infinity()};
  std::size_t placed = 0;
  if (chance(1.0 / 3)) {
    for (std::size_t n = uniform(1, 3); n > 0; --n, ++placed) {
      const T x = bad[uniform(0, 2)];
      switch (uniform(0, 3)) {
        case 0:
          q.data()[uniform(0, q.size() - 1)] = x;
          break;
        case 1:
          k.data()[uniform(0, k.size() - 1)] = x;
          break;
        case 2:
          v.data()[uniform(0, v.size() - 1)] = x;
          break;
        default:
          dout.data()[uniform(0, dout.size() - 1)] = x;
          break;
      }
    }
    if (form >= 1)
      for (std::size_t bb = 0; bb < b; ++bb)
        for (std::size_t j = 0; j < skv; ++j)
          if (pad(bb, j) != 0 && chance(0.3))
            for (std::size_t gg = 0; gg < C::kv_heads; ++gg, placed += 2) {
              k(bb, gg, j, uniform(0, C::d_k - 1)) = bad[uniform(0, 2)];
              v(bb, gg, j, uniform(0, C::d_v - 1)) = bad[uniform(0, 2)];
            }
  }
  if (form >= 1)
    rep.text << ", padding "
             << (pad_form == 3 ? "past each length"
                               : "density " + std::to_string(pad_densities[pad_form]));
  if (form == 2)
    rep.text << ", pairs "
             << (pair_form == 3 ? "across documents"
                                : "density " + std::to_string(pair_densities[pair_form]));
  rep.text << ", " << placed << " bad values placed";

  test::core_masks<T> used;
  if (form >= 1) {
    used.causal = true, used.pad = pad.data();
    used.causal_offset = diagonal.offset, used.causal_window = diagonal.window;
  }
  if (form == 2) used.pairs = pairs.data(), used.add = add.data();
  const test::core_gradients<T> want(b, C::heads, C::kv_heads, sq, skv, C::d_k, C::d_v, q.data(),
                                     k.data(), v.data(), dout.data(), used, rate, seed);
  auto run = [&](const auto& e) {
    set_num_threads(threads);
    auto check = [&](auto policy) {
      auto tape = forward_for_training(e, policy, dropout{rate, seed});
      const auto grads = backward(tape, dout, policy);
      for (const std::string& d : {test::bounded_disagreement("out", tape.output(), want.out),
                                   test::bounded_disagreement("dq", grads.q, want.dq),
                                   test::bounded_disagreement("dk", grads.k, want.dk),
                                   test::bounded_disagreement("dv", grads.v, want.dv)})
        if (!d.empty()) {
          rep.failed = true;
          rep.text << "\n  " << decltype(policy)::name << ": " << d;
        }
    };
    check(fused);
    check(unfused);
    set_num_threads(0);
  };
  const auto s = scores(q, k);
  switch (form) {
    case 0:
      return run(attend(softmax(s), v));
    case 1:
      return run(attend(softmax(mask(s, diagonal, ignore_keys(pad))), v));
    default:
      return run(attend(
          softmax(mask(s, ignore_where(pairs), add_to_scores(add), diagonal, ignore_keys(pad))),
          v));
  }
}

/// Runs the case of `seed`; false (with the report printed) when an evaluator disagrees.
bool run_seed(std::uint64_t seed, bool verbose) {
  std::mt19937_64 g(seed);
  case_report rep;
  test::with_config<configs>(
      std::uniform_int_distribution<std::size_t>(0, std::tuple_size_v<configs> - 1)(g),
      [&]<class C>(std::type_identity<C>) { run_case<C>(g, rep); });
  if (verbose) BOOST_TEST_MESSAGE("case of seed " << seed << ": " << rep.text.str());
  if (rep.failed) {
    BOOST_ERROR("gradient differential case with seed "
                << seed << " failed: " << rep.text.str() << "\n  replay: ARGUS_GRAD_DIFF_SEED="
                << seed << " ./build/gcc/tests/unit.grad.differential");
  }
  return !rep.failed;
}

}  // namespace

BOOST_AUTO_TEST_CASE(training_agrees_with_the_rules_on_random_problems) {
  const auto ran = test::run_seeds("ARGUS_GRAD_DIFF_SEED", "ARGUS_GRAD_DIFF_CASES", 60, run_seed);
  BOOST_TEST_MESSAGE(ran.first << " gradient differential cases, " << ran.second << " failed");
  BOOST_TEST(ran.second == 0u);
}

// Whole tiles that the padding or the pair mask ignores, which the fused passes skip, beside
// tiles they ignore in part and tiles they ignore none of (which the fused backward gives to
// its unmasked slivers): a padded batch (item 1 keeps 180 of 600 keys: its last two key tiles
// of 256 are padding only) and three packed documents, [0, 320), [320, 450), [450, 600) (the
// queries, all in the first, ignore the last key tile whole and none of the first), with NaN
// in the K and V rows of ignored keys; grouped-query, on 1, 2 and 3 threads (the backward's
// two ways of sharing work), with and without a causal mask.
BOOST_AUTO_TEST_CASE(whole_tiles_of_padding_or_across_documents_add_nothing) {
  using T = float;
  constexpr std::size_t H = 4, G = 2, D = 32, B = 2, SQ = 300, SKV = 600;
  tensor<T, shape<batch<>, head<H>, seq<>, head_dim<D>>> q(B, SQ), dout(B, SQ);
  tensor<T, shape<batch<>, head<G>, seq<>, head_dim<D>>> k(B, SKV), v(B, SKV);
  std::mt19937_64 g(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto* t : {q.data(), dout.data()})
    for (std::size_t x = 0; x < q.size(); ++x) t[x] = T(normal(g));
  for (auto* t : {k.data(), v.data()})
    for (std::size_t x = 0; x < k.size(); ++x) t[x] = T(normal(g));
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad(B, SKV);  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs(SQ, SKV);         // (SEQ_Q,SEQ_KV)
  auto document = [](std::size_t x) { return x < 320 ? 0 : x < 450 ? 1 : 2; };
  for (std::size_t j = 0; j < SKV; ++j) {
    pad(0, j) = 0, pad(1, j) = j >= 180 ? 1 : 0;
    for (std::size_t i = 0; i < SQ; ++i) pairs(i, j) = document(i) != document(j);
  }
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t gg = 0; gg < G; ++gg) {
    k(1, gg, 400, 3) = nan, v(1, gg, 520, 0) = nan;  // padded keys of item 1
    k(0, gg, 550, 1) = nan, v(0, gg, 599, 2) = nan;  // keys of the third document
  }
  for (bool diagonal : {false, true}) {
    test::core_masks<T> used;
    used.causal = diagonal, used.causal_offset = std::ptrdiff_t(SKV - SQ);  // lower right
    used.pad = pad.data(), used.pairs = pairs.data();
    const test::core_gradients<T> want(B, H, G, SQ, SKV, D, D, q.data(), k.data(), v.data(),
                                       dout.data(), used, 0.0, 0);
    const auto s = scores(q, k);
    auto check = [&](const auto& e, auto policy, std::size_t threads) {
      set_num_threads(threads);
      auto tape = forward_for_training(e, policy);
      const auto grads = backward(tape, dout, policy);
      set_num_threads(0);
      for (const std::string& d : {test::bounded_disagreement("out", tape.output(), want.out),
                                   test::bounded_disagreement("dq", grads.q, want.dq),
                                   test::bounded_disagreement("dk", grads.k, want.dk),
                                   test::bounded_disagreement("dv", grads.v, want.dv)}) {
        BOOST_TEST_INFO(decltype(policy)::name << ", causal " << diagonal << ", " << threads
                                               << " threads");
        BOOST_TEST(d.empty(), d);
      }
    };
    for (std::size_t threads : {1, 2, 3}) {
      if (diagonal) {
        const auto e = attend(
            softmax(mask(s, causal_lower_right(SQ, SKV), ignore_keys(pad), ignore_where(pairs))),
            v);
        check(e, fused, threads);
        if (threads == 1) check(e, unfused, threads);
      } else {
        const auto e = attend(softmax(mask(s, ignore_keys(pad), ignore_where(pairs))), v);
        check(e, fused, threads);
        if (threads == 1) check(e, unfused, threads);
      }
    }
  }
}
