// Causal masks off the main diagonal and with a window: causal_from(k) (query i attends key j
// iff j <= i + k), causal_lower_right(seq_q, seq_kv) (k = seq_kv - seq_q, PyTorch's
// causal_lower_right) and m.windowed(w) / sliding_window(w) (also k - w < j). Each is checked
// against the dense ignore_where mask of its definition, over offsets past either end, windows
// from none to wider than the keys, and shapes across the fused kernels' tiles (64 queries, 60
// keys forward; 64 and 256 backward), for the output and for the gradients, fused and
// unfused; and against what they are for: the last queries of a causal self-attention,
// computed after cached keys, with and without a window.
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>
#include <argus/grad/training.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace argus;

namespace {

using test::max_rel_diff;
using test::randomize;

using q_shape = shape<batch<>, head<4>, seq<>, head_dim<64>>;
using kv_shape = shape<batch<>, head<2>, seq<>, head_dim<64>>;
using pairs_t = tensor<bool, shape<seq<>, seq<>>>;

constexpr std::size_t every_key = causal_mask::every_key;

/// The dense mask of causal_from(k).windowed(w): true (ignored) where j > i + k or, with a
/// window, j <= i + k - w.
pairs_t dense(std::size_t sq, std::size_t skv, std::ptrdiff_t k, std::size_t w) {
  pairs_t m(sq, skv);  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < sq; ++i)
    for (std::size_t j = 0; j < skv; ++j) {
      const auto jj = static_cast<std::ptrdiff_t>(j), diagonal = static_cast<std::ptrdiff_t>(i) + k;
      m(i, j) =
          jj > diagonal || (w != every_key && jj <= diagonal - static_cast<std::ptrdiff_t>(w));
    }
  return m;
}

/// The windows tried: none, one key, a few, about a forward key tile, more than any length.
const std::size_t windows[] = {every_key, 1, 7, 61, 1000};
std::string window_name(std::size_t w) { return w == every_key ? "none" : std::to_string(w); }

/// Offsets worth trying for (sq, skv): before the first query, around 0, around the
/// bottom-right diagonal and past the last key.
std::vector<std::ptrdiff_t> offsets(std::size_t sq, std::size_t skv) {
  const auto q = static_cast<std::ptrdiff_t>(sq), kv = static_cast<std::ptrdiff_t>(skv);
  return {-q - 3, -q, -q + 1, -7, -1, 0, 1, 5, kv - q - 1, kv - q, kv - 1, kv, kv + 9};
}

/// The output and the gradients of `core` (a causal mask), fused and unfused, against those of
/// `dense_core` (the dense ignore_where mask of the same pairs) in unfused steps.
template <class Core, class Dense, class DOut>
void gradients_agree(const Core& core, const Dense& dense_core, const DOut& dout,
                     const std::string& where) {
  auto want_tape = forward_for_training(dense_core, unfused);
  const auto want = backward(want_tape, dout, unfused);
  auto check = [&](auto policy) {
    auto tape = forward_for_training(core, policy);
    const auto got = backward(tape, dout, policy);
    const std::string at = std::string(decltype(policy)::name) + ", " + where;
    BOOST_TEST(max_rel_diff(tape.output(), want_tape.output()) <= 1e-5, at << ": output");
    BOOST_TEST(max_rel_diff(got.q, want.q) <= 1e-4, at << ": dq");
    BOOST_TEST(max_rel_diff(got.k, want.k) <= 1e-4, at << ": dk");
    BOOST_TEST(max_rel_diff(got.v, want.v) <= 1e-4, at << ": dv");
  };
  check(fused);
  check(unfused);
}

const std::pair<std::size_t, std::size_t> lengths[] = {{1, 300},  {5, 5},    {70, 70},
                                                       {130, 61}, {64, 200}, {200, 133}};

}  // namespace

BOOST_AUTO_TEST_CASE(the_output_is_that_of_the_dense_mask) {
  for (const auto& len : lengths) {
    const std::size_t sq = len.first, skv = len.second;  // (Clang 14 captures no bindings)
    tensor<float, q_shape> q(2, sq);                     // (B,H,SEQ_Q,D_K)
    tensor<float, kv_shape> k(2, skv);                   // (B,G,SEQ_KV,D_K)
    tensor<float, kv_shape> v(2, skv);                   // (B,G,SEQ_KV,D_V)
    randomize(q), randomize(k), randomize(v);
    const auto s = scores(q, k);
    for (const std::ptrdiff_t off : offsets(sq, skv))
      for (const std::size_t w : windows) {
        const pairs_t m = dense(sq, skv, off, w);
        const auto want = evaluate_reference(attend(softmax(mask(s, ignore_where(m))), v));
        const auto e = attend(softmax(mask(s, causal_from(off).windowed(w))), v);
        const std::string where = "seq_q " + std::to_string(sq) + ", seq_kv " +
                                  std::to_string(skv) + ", offset " + std::to_string(off) +
                                  ", window " + window_name(w);
        for (std::size_t threads : {1u, 2u}) {
          set_num_threads(threads);
          BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5,
                     "fused, " << where << ", threads " << threads);
        }
        set_num_threads(0);
        BOOST_TEST(max_rel_diff(evaluate(e, unfused), want) <= 1e-5, "unfused, " << where);
        BOOST_TEST(max_rel_diff(evaluate_reference(e), want) <= 1e-12, "reference, " << where);
      }
    const auto lower_right = attend(softmax(mask(s, causal_lower_right(sq, skv))), v);
    const auto from_end =
        attend(softmax(mask(s, causal_from(std::ptrdiff_t(skv) - std::ptrdiff_t(sq)))), v);
    BOOST_TEST(max_rel_diff(evaluate(lower_right, fused), evaluate(from_end, fused)) == 0.0);
  }
}

// Few queries against many keys split the keys over threads (decode): with a window only the
// keys some query sees, from the first query's window on.
BOOST_AUTO_TEST_CASE(decode_shaped_calls_split_the_window_over_threads) {
  const std::size_t sq = 2, skv = 1000;
  tensor<float, q_shape> q(2, sq);    // (B,H,SEQ_Q,D_K)
  tensor<float, kv_shape> k(2, skv);  // (B,G,SEQ_KV,D_K)
  tensor<float, kv_shape> v(2, skv);  // (B,G,SEQ_KV,D_V)
  randomize(q), randomize(k), randomize(v);
  const auto s = scores(q, k);
  for (const std::ptrdiff_t off : {998, 700, 300})
    for (const std::size_t w : {every_key, std::size_t{400}, std::size_t{260}}) {
      const pairs_t m = dense(sq, skv, off, w);
      const auto want = evaluate_reference(attend(softmax(mask(s, ignore_where(m))), v));
      const auto e = attend(softmax(mask(s, causal_from(off).windowed(w))), v);
      for (std::size_t threads : {1u, 2u, 3u}) {
        set_num_threads(threads);
        BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5,
                   "offset " << off << ", window " << window_name(w) << ", threads " << threads);
      }
      set_num_threads(0);
    }
}

BOOST_AUTO_TEST_CASE(the_gradients_are_those_of_the_dense_mask) {
  for (const auto& len : lengths) {
    const std::size_t sq = len.first, skv = len.second;  // (Clang 14 captures no bindings)
    tensor<float, q_shape> q(1, sq), dout(1, sq);        // (B,H,SEQ_Q,D_K)
    tensor<float, kv_shape> k(1, skv), v(1, skv);        // (B,G,SEQ_KV,D_K)
    randomize(q), randomize(k), randomize(v), randomize(dout);
    const auto s = scores(q, k);
    for (const std::ptrdiff_t off : offsets(sq, skv))
      for (const std::size_t w : windows) {
        const pairs_t m = dense(sq, skv, off, w);
        gradients_agree(attend(softmax(mask(s, causal_from(off).windowed(w))), v),
                        attend(softmax(mask(s, ignore_where(m))), v), dout,
                        "seq_q " + std::to_string(sq) + ", seq_kv " + std::to_string(skv) +
                            ", offset " + std::to_string(off) + ", window " + window_name(w));
      }
  }
}

// A query row that is not finite and sees no key of a tile (an offset below 0 leaves the first
// rows none at all) joins only ignored pairs there: it brings nothing to dK and dV (found by
// the gradient fuzzer: the fused backward's dK was NaN).
BOOST_AUTO_TEST_CASE(rows_that_see_no_key_bring_nothing_to_the_gradients) {
  const std::size_t sq = 17, skv = 5;
  tensor<float, q_shape> q(1, sq), dout(1, sq);  // (B,H,SEQ_Q,D_K)
  tensor<float, kv_shape> k(1, skv), v(1, skv);  // (B,G,SEQ_KV,D_K)
  randomize(q), randomize(k), randomize(v), randomize(dout);
  q(0, 1, 0, 3) = std::numeric_limits<float>::quiet_NaN();    // query 0 of head 1
  dout(0, 2, 1, 0) = std::numeric_limits<float>::infinity();  // query 1 of head 2
  const auto s = scores(q, k);
  for (const std::ptrdiff_t off : {-12, -3, -2})
    for (const std::size_t w : {every_key, std::size_t{2}}) {
      const pairs_t m = dense(sq, skv, off, w);
      gradients_agree(attend(softmax(mask(s, causal_from(off).windowed(w))), v),
                      attend(softmax(mask(s, ignore_where(m))), v), dout,
                      "offset " + std::to_string(off) + ", window " + window_name(w));
    }
}

// The use the lower-right alignment exists for: queries that follow cached keys. The last
// `tail` rows of a causal self-attention over n tokens are the attention of those tokens'
// queries to all n keys under causal_lower_right(tail, n).
BOOST_AUTO_TEST_CASE(queries_after_cached_keys_see_what_causal_self_attention_sees) {
  using mha_t = multi_head_attention<128, 4>;
  mha_t m;
  randomize(m.w_q, 0.1), randomize(m.w_k, 0.1), randomize(m.w_v, 0.1), randomize(m.w_o, 0.1);
  randomize(m.b_q, 0.1), randomize(m.b_k, 0.1), randomize(m.b_v, 0.1), randomize(m.b_o, 0.1);
  using x_t = tensor<float, shape<batch<>, seq<>, model<128>>>;
  const std::size_t n = 150;
  x_t x(2, n);  // (B,SEQ,D_MODEL)
  randomize(x);
  for (const std::size_t w : {every_key, std::size_t{1}, std::size_t{40}})
    for (const std::size_t tail : {std::size_t{1}, std::size_t{7}, std::size_t{64}, n}) {
      const x_t full = evaluate(m.forward(x, causal.windowed(w)), fused);
      x_t last(2, tail);  // (B,TAIL,D_MODEL): the newest tokens
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < tail; ++i)
          for (std::size_t c = 0; c < 128; ++c) last(b, i, c) = x(b, n - tail + i, c);
      for (const bool use_fused : {true, false}) {
        const auto e = m.forward(last, x, x, causal_lower_right(tail, n).windowed(w));
        const x_t got = use_fused ? evaluate(e, fused) : evaluate(e, unfused);
        double worst = 0;
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t i = 0; i < tail; ++i)
            for (std::size_t c = 0; c < 128; ++c)
              worst = std::max(worst, double(std::abs(got(b, i, c) - full(b, n - tail + i, c))));
        BOOST_TEST(worst <= 1e-5, (use_fused ? "fused" : "unfused")
                                      << ", tail " << tail << ", window " << window_name(w)
                                      << ": max difference " << worst);
      }
    }
}

BOOST_AUTO_TEST_CASE(lengths_that_are_not_the_scores_throw_shape_error) {
  tensor<float, q_shape> q(1, 6);
  tensor<float, kv_shape> k(1, 9);
  const auto s = scores(q, k);
  auto names = [](const std::string& a, const std::string& b) {
    return [a, b](const shape_error& e) {
      const std::string w = e.what();
      return w.find("causal_lower_right") != std::string::npos && w.find(a) != std::string::npos &&
             w.find(b) != std::string::npos;
    };
  };
  BOOST_CHECK_EXCEPTION(mask(s, causal_lower_right(7, 9)), shape_error, names("seq_q", "7"));
  BOOST_CHECK_EXCEPTION(mask(s, causal_lower_right(6, 8)), shape_error, names("seq_kv", "8"));
  BOOST_CHECK_NO_THROW(mask(s, causal_lower_right(6, 9)));
}

BOOST_AUTO_TEST_CASE(sliding_window_is_the_causal_mask_with_a_window) {
  tensor<float, q_shape> q(1, 100);
  tensor<float, kv_shape> k(1, 100), v(1, 100);
  randomize(q), randomize(k), randomize(v);
  const auto s = scores(q, k);
  const auto a = evaluate(attend(softmax(mask(s, sliding_window(16))), v), fused);
  const auto b = evaluate(attend(softmax(mask(s, causal.windowed(16))), v), fused);
  BOOST_TEST(max_rel_diff(a, b) == 0.0);
  // A window of 0 attends nothing: every output row is zero.
  const auto none = evaluate(attend(softmax(mask(s, sliding_window(0))), v), fused);
  BOOST_TEST(std::all_of(none.begin(), none.end(), [](float x) { return x == 0.0f; }));
}

// FlashAttention's window_size = (left, right) without causal: query i attends keys
// i + skv - sq - left ... i + skv - sq + right, which is causal_from(skv - sq + right) with a
// window of left + right + 1 keys (docs/how-to/masks.md).
BOOST_AUTO_TEST_CASE(a_band_around_the_diagonal_is_a_shifted_window) {
  for (const auto& len : lengths) {
    const std::size_t sq = len.first, skv = len.second;
    tensor<float, q_shape> q(1, sq);    // (B,H,SEQ_Q,D_K)
    tensor<float, kv_shape> k(1, skv);  // (B,G,SEQ_KV,D_K)
    tensor<float, kv_shape> v(1, skv);  // (B,G,SEQ_KV,D_V)
    randomize(q), randomize(k), randomize(v);
    const auto s = scores(q, k);
    const auto shift = static_cast<std::ptrdiff_t>(skv) - static_cast<std::ptrdiff_t>(sq);
    for (const auto& [left, right] :
         {std::pair<std::ptrdiff_t, std::ptrdiff_t>{5, 3}, {0, 0}, {64, 17}, {2, 200}}) {
      pairs_t band(sq, skv);  // (SEQ_Q,SEQ_KV): true outside the band
      for (std::size_t i = 0; i < sq; ++i)
        for (std::size_t j = 0; j < skv; ++j) {
          const auto d = static_cast<std::ptrdiff_t>(j) - static_cast<std::ptrdiff_t>(i) - shift;
          band(i, j) = d < -left || d > right;
        }
      const auto want = evaluate_reference(attend(softmax(mask(s, ignore_where(band))), v));
      const auto e = attend(
          softmax(mask(s, causal_from(shift + right).windowed(std::size_t(left + right + 1)))), v);
      BOOST_TEST(
          max_rel_diff(evaluate(e, fused), want) <= 1e-5,
          "fused, seq_q " << sq << ", seq_kv " << skv << ", (" << left << ", " << right << ")");
      BOOST_TEST(
          max_rel_diff(evaluate(e, unfused), want) <= 1e-5,
          "unfused, seq_q " << sq << ", seq_kv " << skv << ", (" << left << ", " << right << ")");
    }
  }
}

BOOST_AUTO_TEST_CASE(explain_names_the_offset) {
  tensor<float, q_shape> q(1, 6);
  tensor<float, kv_shape> k(1, 9), v(1, 9);
  const auto e = attend(softmax(mask(scores(q, k), causal_lower_right(6, 9))), v);
  const std::string text = explain(e, fused).to_string();
  BOOST_TEST(text.find("causal (offset 3)") != std::string::npos, text);
  const std::string plain =
      explain(attend(softmax(mask(scores(q, k), causal)), v), fused).to_string();
  BOOST_TEST(plain.find("causal (offset") == std::string::npos, plain);
  const std::string windowed =
      explain(attend(softmax(mask(scores(q, k), sliding_window(4))), v), fused).to_string();
  BOOST_TEST(windowed.find("causal (window 4)") != std::string::npos, windowed);
}
