// Defined results for bad values (docs/reference/semantics.md), rule by rule, in every
// evaluator: fused (one and three threads, tiled and decode-shaped), unfused and the double
// reference. Also: moved-from tensors are empty or rejected with shape_error, never a crash.
// labels: memory
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace argus;

namespace {

using test::randomize;

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

using q_shape = shape<batch<>, head<4>, seq<>, head_dim<8>>;   // (B,4,SEQ_Q,8)
using kv_shape = shape<batch<>, head<2>, seq<>, head_dim<8>>;  // (B,2,SEQ_KV,8): two groups
using v_shape = shape<batch<>, head<2>, seq<>, head_dim<12>>;  // (B,2,SEQ_KV,12): d_v != d_k

/// Random Q, K, V of one problem; group g of K/V serves query heads 2g and 2g + 1.
struct problem {
  tensor<float, q_shape> q;   // (B,4,SEQ_Q,8)
  tensor<float, kv_shape> k;  // (B,2,SEQ_KV,8)
  tensor<float, v_shape> v;   // (B,2,SEQ_KV,12)
  problem(std::size_t b, std::size_t sq, std::size_t skv) : q(b, sq), k(b, skv), v(b, skv) {
    randomize(q), randomize(k), randomize(v);
  }
};

/// One evaluator's result, in double.
struct result {
  std::string name;
  tensor<double, shape<batch<>, head<4>, seq<>, head_dim<12>>> out;  // (B,4,SEQ_Q,12)
  double operator()(std::size_t b, std::size_t h, std::size_t i, std::size_t c) const {
    return out(b, h, i, c);
  }
};

template <class Src>
result to_double(std::string name, const Src& t) {
  result r{std::move(name), decltype(result::out)(t.extent(0), t.extent(2))};
  for (std::size_t n = 0; n < t.size(); ++n) r.out.data()[n] = static_cast<double>(t.data()[n]);
  return r;
}

/// e evaluated fused (1 and 3 threads), unfused and by the reference.
template <class E>
std::vector<result> every_evaluator(const E& e) {
  std::vector<result> r;
  set_num_threads(1);
  r.push_back(to_double("fused, 1 thread", evaluate(e, fused)));
  set_num_threads(3);
  r.push_back(to_double("fused, 3 threads", evaluate(e, fused)));
  set_num_threads(0);
  r.push_back(to_double("unfused", evaluate(e, unfused)));
  r.push_back(to_double("reference", evaluate_reference(e)));
  return r;
}

/// The row (b, h, i): "nan" when every element is NaN, "finite" when none is NaN or inf,
/// "zero" when every element is 0, "mixed" otherwise.
std::string row_kind(const result& r, std::size_t b, std::size_t h, std::size_t i) {
  bool all_nan = true, all_finite = true, all_zero = true;
  for (std::size_t c = 0; c < 12; ++c) {
    const double x = r(b, h, i, c);
    all_nan = all_nan && std::isnan(x);
    all_finite = all_finite && std::isfinite(x);
    all_zero = all_zero && x == 0.0;
  }
  return all_zero ? "zero" : all_nan ? "nan" : all_finite ? "finite" : "mixed";
}

/// Every row of every evaluator has the kind expected(b, h, i) says.
void expect_rows(
    const std::vector<result>& rs, std::size_t batch, std::size_t sq,
    const std::function<std::string(std::size_t, std::size_t, std::size_t)>& expected) {
  for (const result& r : rs)
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < 4; ++h)
        for (std::size_t i = 0; i < sq; ++i) {
          const std::string want = expected(b, h, i), got = row_kind(r, b, h, i);
          BOOST_TEST((want == got || (want == "finite" && got == "zero")),
                     r.name << ": row (" << b << ", " << h << ", " << i << ") is " << got
                            << ", expected " << want);
        }
}

/// Every evaluator's result equals its counterpart in `clean` wherever clean is finite
/// (relative 1e-4: float evaluators against each other's clean runs).
void expect_equal(const std::vector<result>& got, const std::vector<result>& clean) {
  for (std::size_t e = 0; e < got.size(); ++e)
    for (std::size_t n = 0; n < got[e].out.size(); ++n) {
      const double x = got[e].out.data()[n], y = clean[e].out.data()[n];
      BOOST_TEST(
          std::abs(x - y) <= 1e-4 * (1 + std::abs(y)),
          got[e].name << ": element " << n << " is " << x << ", without the bad value " << y);
    }
}

// Tiled (several query and key tiles) and decode-shaped (keys split over threads) problems.
struct extents_case {
  std::size_t batch, sq, skv;
};
const extents_case cases[] = {{2, 37, 150}, {2, 3, 700}};

}  // namespace

BOOST_AUTO_TEST_CASE(a_nan_query_row_gives_a_nan_output_row) {
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("seq_q " << c.sq << ", seq_kv " << c.skv) {
      problem p(c.batch, c.sq, c.skv);
      p.q(1, 2, 1, 3) = nan_f;  // query row (1, 2, 1)
      p.q(0, 0, 2, 0) = nan_f;  // query row (0, 0, 2): every key ignored under the padding below
      tensor<std::uint8_t, shape<batch<>, seq<>>> pad(c.batch, c.skv);  // (B,SEQ_KV)
      const auto rs = every_evaluator(attend(softmax(scores(p.q, p.k)), p.v));
      expect_rows(rs, c.batch, c.sq, [](std::size_t b, std::size_t h, std::size_t i) {
        return (b == 1 && h == 2 && i == 1) || (b == 0 && h == 0 && i == 2) ? "nan" : "finite";
      });
      // With every key of item 0 padded, row (0, 0, 2) depends on nothing: zero.
      for (std::size_t j = 0; j < c.skv; ++j) pad(0, j) = 1;
      const auto masked =
          every_evaluator(attend(softmax(mask(scores(p.q, p.k), ignore_keys(pad))), p.v));
      expect_rows(masked, c.batch, c.sq, [](std::size_t b, std::size_t h, std::size_t i) {
        return b == 0 ? "zero" : (h == 2 && i == 1) ? "nan" : "finite";
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(a_nan_key_row_reaches_the_queries_that_attend_it) {
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("seq_q " << c.sq << ", seq_kv " << c.skv) {
      problem p(c.batch, c.sq, c.skv);
      p.k(0, 1, 2, 5) = nan_f;  // key 2 of group 1 (query heads 2, 3), item 0
      // Causal: query i sees key 2 iff i >= 2; group 0 and item 1 never see it.
      const auto rs = every_evaluator(attend(softmax(mask(scores(p.q, p.k), causal)), p.v));
      expect_rows(rs, c.batch, c.sq, [](std::size_t b, std::size_t h, std::size_t i) {
        return b == 0 && h >= 2 && i >= 2 ? "nan" : "finite";
      });
      p.k(1, 0, 0, 0) = inf_f;  // +inf · q: +inf, -inf or NaN logits for group 0 of item 1
      const auto inf_rs = every_evaluator(attend(softmax(mask(scores(p.q, p.k), causal)), p.v));
      for (std::size_t e = 1; e < inf_rs.size(); ++e)  // whatever each row is, all agree
        for (std::size_t h = 0; h < 2; ++h)
          for (std::size_t i = 0; i < c.sq; ++i)
            BOOST_TEST(row_kind(inf_rs[e], 1, h, i) == row_kind(inf_rs[0], 1, h, i),
                       inf_rs[e].name << " row (1, " << h << ", " << i << ")");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_padded_key_contributes_nothing_whatever_its_rows_hold) {
  for (const auto& c : cases) {
    for (float bad : {nan_f, inf_f, -inf_f, 1e30f}) {
      BOOST_TEST_CONTEXT("seq_q " << c.sq << ", seq_kv " << c.skv << ", value " << bad) {
        problem p(c.batch, c.sq, c.skv);
        tensor<std::uint8_t, shape<batch<>, seq<>>> pad(c.batch, c.skv);  // (B,SEQ_KV)
        for (std::size_t j : {std::size_t(0), std::size_t(7), c.skv - 1}) pad(1, j) = 1;
        const auto clean =
            every_evaluator(attend(softmax(mask(scores(p.q, p.k), ignore_keys(pad))), p.v));
        for (std::size_t j : {std::size_t(0), std::size_t(7), c.skv - 1})
          for (std::size_t g = 0; g < 2; ++g)
            p.k(1, g, j, 3) = bad, p.v(1, g, j, 4) = bad, p.v(1, g, j, 11) = bad;
        const auto rs =
            every_evaluator(attend(softmax(mask(scores(p.q, p.k), ignore_keys(pad))), p.v));
        expect_equal(rs, clean);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_key_masked_for_some_queries_contributes_nothing_to_them) {
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("seq_q " << c.sq << ", seq_kv " << c.skv) {
      problem p(c.batch, c.sq, c.skv);
      tensor<bool, shape<seq<>, seq<>>> pairs(c.sq, c.skv);  // (SEQ_Q,SEQ_KV)
      tensor<float, shape<seq<>, seq<>>> add(c.sq, c.skv);   // (SEQ_Q,SEQ_KV)
      for (std::size_t i = 0; i < c.sq; ++i)
        if (i % 2 == 0) pairs(i, 1) = true, add(i, 1) = -inf_f;  // even queries ignore key 1
      p.v(0, 0, 1, 6) = nan_f;                                   // V row of key 1, group 0, item 0
      p.v(0, 0, 2, 7) = nan_f;  // key 2: causal hides it from queries 0, 1
      // Row (0, h < 2, i) depends on key 1 iff i is odd and on key 2 iff i >= 2; only the NaN
      // columns (6 and 7) are NaN, so check those columns.
      auto expect = [&](const std::vector<result>& rs) {
        for (const result& r : rs)
          for (std::size_t h = 0; h < 4; ++h)
            for (std::size_t i = 0; i < c.sq; ++i) {
              const bool sees1 = h < 2 && i % 2 == 1, sees2 = h < 2 && i >= 2;
              BOOST_TEST(std::isnan(r(0, h, i, 6)) == sees1,
                         r.name << " row " << h << ", " << i << " column 6");
              BOOST_TEST(std::isnan(r(0, h, i, 7)) == sees2,
                         r.name << " row " << h << ", " << i << " column 7");
              BOOST_TEST(std::isfinite(r(0, h, i, 0)),
                         r.name << " row " << h << ", " << i << " column 0");
            }
      };
      expect(every_evaluator(
          attend(softmax(mask(scores(p.q, p.k), causal, ignore_where(pairs))), p.v)));
      expect(every_evaluator(
          attend(softmax(mask(scores(p.q, p.k), causal, add_to_scores(add))), p.v)));
    }
  }
}

BOOST_AUTO_TEST_CASE(
    a_bad_value_of_an_unmasked_key_reaches_its_column_even_when_its_weight_underflows) {
  problem p(1, 5, 90);
  randomize(p.q, 30.0), randomize(p.k, 30.0);  // logits of order 1e4: most weights underflow to 0
  p.v(0, 1, 40, 9) = nan_f;
  p.v(0, 0, 41, 2) = inf_f;
  for (const result& r : every_evaluator(attend(softmax(scores(p.q, p.k)), p.v)))
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t col = 0; col < 12; ++col) {
          const bool bad = (h >= 2 && col == 9) || (h < 2 && col == 2);
          BOOST_TEST(std::isfinite(r(0, h, i, col)) == !bad,
                     r.name << " (" << h << ", " << i << ", " << col << ")");
        }
}

BOOST_AUTO_TEST_CASE(additive_masks_nan_and_plus_inf_poison_the_row_minus_inf_ignores) {
  problem p(1, 6, 20);
  tensor<float, shape<seq<>, seq<>>> add(6, 20);  // (SEQ_Q,SEQ_KV)
  add(1, 3) = nan_f, add(2, 19) = inf_f;
  for (std::size_t j = 0; j < 20; ++j) add(4, j) = -inf_f;  // query 4 ignores every key
  add(5, 0) = -inf_f;                                       // query 5 ignores key 0
  const auto rs = every_evaluator(attend(softmax(mask(scores(p.q, p.k), add_to_scores(add))), p.v));
  expect_rows(rs, 1, 6, [](std::size_t, std::size_t, std::size_t i) {
    return i == 1 || i == 2 ? "nan" : i == 4 ? "zero" : "finite";
  });
  tensor<bool, shape<seq<>, seq<>>> pairs(6, 20);  // (SEQ_Q,SEQ_KV)
  for (std::size_t j = 0; j < 20; ++j) pairs(4, j) = true;
  pairs(5, 0) = true;
  add(1, 3) = 0, add(2, 19) = 0;
  for (std::size_t j = 0; j < 20; ++j) add(4, j) = 0;
  add(5, 0) = 0;
  // -inf added == the pair ignored (add is now all zeros).
  add(5, 0) = -inf_f;
  const auto with_add =
      every_evaluator(attend(softmax(mask(scores(p.q, p.k), add_to_scores(add))), p.v));
  const auto with_pairs = every_evaluator(
      attend(softmax(mask(scores(p.q, p.k), ignore_where(pairs), add_to_scores(add))), p.v));
  for (std::size_t e = 0; e < with_add.size(); ++e)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t col = 0; col < 12; ++col)
        BOOST_TEST(std::abs(with_add[e](0, h, 5, col) - with_pairs[e](0, h, 5, col)) <= 1e-5,
                   with_add[e].name);
}

BOOST_AUTO_TEST_CASE(fully_masked_rows_have_zero_weights_and_zero_output) {
  problem p(2, 4, 30);
  tensor<bool, shape<seq<>, seq<>>> pairs(4, 30);  // (SEQ_Q,SEQ_KV)
  for (std::size_t j = 0; j < 30; ++j) pairs(2, j) = true;
  p.q(0, 1, 2, 0) = nan_f;  // a fully masked row depends on nothing, not even its query
  const auto w = softmax(mask(scores(p.q, p.k), ignore_where(pairs)));
  for (const auto& weights : {evaluate(w, unfused), evaluate(w, fused)})
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 4; ++h)
        for (std::size_t j = 0; j < 30; ++j) BOOST_TEST(weights(b, h, 2, j) == 0.0f);
  const auto ref = evaluate_reference(w);
  for (std::size_t j = 0; j < 30; ++j) BOOST_TEST(ref(0, 1, 2, j) == 0.0);
  expect_rows(every_evaluator(attend(w, p.v)), 2, 4,
              [](std::size_t, std::size_t, std::size_t i) { return i == 2 ? "zero" : "finite"; });
}

BOOST_AUTO_TEST_CASE(softmax_rows_nan_plus_inf_and_fully_masked) {
  const float m = -inf_f;
  float rows[4][5] = {
      {m, nan_f, m, m, m}, {1, 2, inf_f, 0, 0}, {m, m, m, m, m}, {0, m, 1e4f, -1e4f, 3}};
  kernel::softmax_rows(&rows[0][0], 4, 5, 5);
  for (float x : rows[0]) BOOST_TEST(std::isnan(x));
  for (float x : rows[1]) BOOST_TEST(std::isnan(x));
  for (float x : rows[2]) BOOST_TEST(x == 0.0f);
  BOOST_TEST(rows[3][2] == 1.0f);
  BOOST_TEST(rows[3][1] == 0.0f);
}

// ---- moved-from tensors ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_moved_from_tensor_with_run_time_extents_is_empty) {
  tensor<float, shape<batch<>, seq<>, model<16>>> x(2, 5);  // (B,SEQ,16)
  auto y = std::move(x);
  BOOST_TEST(x.extent(0) == 0u);
  BOOST_TEST(x.extent(1) == 0u);
  BOOST_TEST(x.size() == 0u);
  BOOST_TEST(y.size() == 160u);
  tensor<float, shape<batch<>, seq<>, model<16>>> z(1, 1);  // (B,SEQ,16)
  z = std::move(y);
  BOOST_TEST(y.size() == 0u);
  BOOST_TEST(z.extent(1) == 5u);
  // Used: an empty self-attention evaluates to an empty result in every evaluator.
  multi_head_attention<16, 2> mha;
  BOOST_TEST(evaluate(mha.forward(x), fused).size() == 0u);
  BOOST_TEST(evaluate(mha.forward(x), unfused).size() == 0u);
  BOOST_TEST(evaluate_reference(mha.forward(x)).size() == 0u);
  // ... and against a live tensor its extents disagree: shape_error, not a crash.
  BOOST_CHECK_THROW((void)mha.forward(z, x, x), shape_error);
}

BOOST_AUTO_TEST_CASE(evaluating_a_moved_from_static_tensor_throws_shape_error) {
  using s = shape<batch<1>, head<2>, seq<6>, head_dim<4>>;  // every extent static
  tensor<float, s> q, k, v;                                 // (1,2,6,4)
  randomize(q), randomize(k), randomize(v);
  tensor<float, s> taken = std::move(k);
  BOOST_TEST(k.extent(2) == 6u);
  BOOST_TEST(k.data() == nullptr);
  auto names_moved_from = [](const shape_error& e) {
    return std::string(e.what()).find("moved-from") != std::string::npos;
  };
  const auto e = attend(softmax(scores(q, k)), v);
  BOOST_CHECK_EXCEPTION(evaluate(e, fused), shape_error, names_moved_from);
  BOOST_CHECK_EXCEPTION(evaluate(e, unfused), shape_error, names_moved_from);
  BOOST_CHECK_EXCEPTION(evaluate_reference(e), shape_error, names_moved_from);
  // A mask read from a moved-from tensor, and a moved-from output tensor.
  tensor<bool, shape<seq<6>, seq<6>>> pairs;  // (6,6)
  auto kept = std::move(pairs);
  const auto m = attend(softmax(mask(scores(q, taken), ignore_where(pairs))), v);
  BOOST_CHECK_EXCEPTION(evaluate(m, fused), shape_error, names_moved_from);
  BOOST_CHECK_EXCEPTION(evaluate(m, unfused), shape_error, names_moved_from);
  BOOST_CHECK_EXCEPTION(evaluate_reference(m), shape_error, names_moved_from);
  tensor<float, s> out;
  auto out2 = std::move(out);
  BOOST_CHECK_EXCEPTION(evaluate(attend(softmax(scores(q, taken)), v), fused, out), shape_error,
                        names_moved_from);
  // Assigned a value again, it is usable (in expressions built afterwards: an expression
  // holds the view it was built with).
  k = taken;
  BOOST_TEST(evaluate(attend(softmax(scores(q, k)), v), fused).size() == 48u);
}

// An expression keeps views of its tensors. One whose tensor's storage went after it was built
// (the tensor destroyed, moved into, assigned a tensor of another shape) read freed memory
// (ASan: heap-use-after-free) or another tensor's elements through the buffer cache; it throws
// shape_error now, in every evaluator, naming what to do. What keeps the storage still works.
BOOST_AUTO_TEST_CASE(an_expression_whose_tensor_lost_its_storage_throws_shape_error) {
  using act = shape<batch<>, seq<>, model<16>>;  // (B,SEQ,16)
  multi_head_attention<16, 2> mha;
  randomize(mha.w_q, 0.25), randomize(mha.w_k, 0.25), randomize(mha.w_v, 0.25);
  randomize(mha.w_o, 0.25);
  tensor<float, act> x(2, 5), same(2, 5), longer(2, 7);
  randomize(x), randomize(same), randomize(longer);
  auto storage_gone = [](const shape_error& e) {
    return std::string(e.what()).find("storage is gone") != std::string::npos;
  };
  auto check_gone = [&](const auto& e) {
    BOOST_CHECK_EXCEPTION(evaluate(e, fused), shape_error, storage_gone);
    BOOST_CHECK_EXCEPTION(evaluate(e, unfused), shape_error, storage_gone);
    BOOST_CHECK_EXCEPTION(evaluate_reference(e), shape_error, storage_gone);
  };
  {  // moved into: by a named tensor, and by a result
    const auto e = mha.forward(x);
    x = tensor<float, act>(2, 5);
    check_gone(e);
    const auto e2 = mha.forward(x);
    x = evaluate(mha.forward(same), fused);
    check_gone(e2);
  }
  {  // assigned a tensor of another shape (copy), and destroyed
    randomize(x);
    const auto e = mha.forward(x);
    x = longer;
    check_gone(e);
    auto gone = std::make_unique<tensor<float, act>>(same);
    const auto e2 = mha.forward(*gone);
    gone.reset();
    check_gone(e2);
  }
  {  // a copy of the same shape goes into the same storage: the expression reads the new values
    x = tensor<float, act>(2, 5);  // x is (2, 7) here
    randomize(x);
    const auto e = mha.forward(x);
    x = same;
    const auto want = evaluate(mha.forward(same), unfused);
    BOOST_TEST(test::max_rel_diff(evaluate(e, fused), want) < 1e-5);
    BOOST_TEST(test::max_rel_diff(evaluate(e, unfused), want) < 1e-5);
    // Moved from, the storage lives on in the tensor moved into, which the expression reads.
    tensor<float, act> moved = std::move(x);
    BOOST_TEST(test::max_rel_diff(evaluate(e, fused), want) < 1e-5);
    BOOST_TEST(test::max_rel_diff(evaluate_reference(e), want) < 1e-4);
    x = std::move(moved);
  }
  {  // a module's weights, moved into with another module
    const auto e = mha.forward(x);
    mha = multi_head_attention<16, 2>{};
    check_gone(e);
  }
  {  // a packed_weight, and a mask's tensor
    const packed_weight<float, shape<model<16>, model<16>>> w(mha.w_q);
    auto pw = std::make_unique<packed_weight<float, shape<model<16>, model<16>>>>(w);
    const auto e = project(x, *pw);
    *pw = w;  // copied: new storage
    check_gone(e);
    tensor<bool, shape<batch<>, seq<>>> padding(2, 5);
    const auto m = mha.forward(x, ignore_keys(padding));
    padding = tensor<bool, shape<batch<>, seq<>>>(2, 5);
    auto names_mask = [](const shape_error& err) {
      const std::string what = err.what();
      return what.find("storage is gone") != std::string::npos &&
             what.find("argus::mask(ignore_keys)") != std::string::npos;
    };
    BOOST_CHECK_EXCEPTION(evaluate(m, fused), shape_error, names_mask);
    BOOST_CHECK_EXCEPTION(evaluate(m, unfused), shape_error, names_mask);
    BOOST_CHECK_EXCEPTION(evaluate_reference(m), shape_error, names_mask);
  }
}

// A thread count past any machine's (SIZE_MAX, 2^63) is taken as kernel's max_threads: the
// kernels' arithmetic on it (2 · threads items per call) wrapped and divided by zero.
BOOST_AUTO_TEST_CASE(a_huge_thread_count_is_clamped_not_a_crash) {
  using test::max_rel_diff;
  multi_head_attention<16, 2> mha;  // weights of the usual scale, 1 / sqrt(d_model)
  randomize(mha.w_q, 0.25), randomize(mha.w_k, 0.25), randomize(mha.w_v, 0.25);
  randomize(mha.w_o, 0.25);
  tensor<float, shape<batch<>, seq<>, model<16>>> x(1, 5), kv(1, 600), d(1, 5);
  randomize(x), randomize(kv), randomize(d);
  set_num_threads(1);
  const auto want = evaluate(mha.forward(x, causal), unfused);
  const auto want_decode = evaluate(mha.forward(x, kv, kv), unfused);
  for (const std::size_t n : {std::size_t(-1), std::size_t(1) << 63, detail::max_threads + 1}) {
    set_num_threads(n);
    BOOST_TEST(num_threads() == detail::max_threads);
    BOOST_TEST(max_rel_diff(evaluate(mha.forward(x, causal), fused), want) < 1e-5);
    BOOST_TEST(max_rel_diff(evaluate(mha.forward(x, causal), unfused), want) < 1e-5);
    BOOST_TEST(max_rel_diff(evaluate(mha.forward(x, kv, kv), fused), want_decode) < 1e-5);
    const auto g = backward(forward_for_training(mha, fused, x, causal), d, fused);
    for (float v : g.w_q) BOOST_TEST_REQUIRE(std::isfinite(v));
  }
  set_num_threads(0);
}
