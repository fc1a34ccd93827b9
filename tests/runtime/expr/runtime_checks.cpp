// Run-time extents that disagree throw argus::shape_error naming both extents, and nothing
// is written to the output.
// labels: memory
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>

using namespace argus;

namespace {
bool names(const shape_error& e, const std::string& a, const std::string& b) {
  const std::string w = e.what();
  return w.find(a) != std::string::npos && w.find(b) != std::string::npos;
}
using heads_t = shape<batch<>, head<2>, seq<>, head_dim<4>>;
}  // namespace

BOOST_AUTO_TEST_CASE(k_and_v_of_different_lengths) {
  tensor<float, heads_t> q(1, 3), k(1, 5), v(1, 6);
  BOOST_CHECK_EXCEPTION(attend(softmax(scores(q, k)), v), shape_error,
                        [](const shape_error& e) { return names(e, "is 5", "is 6"); });
}

BOOST_AUTO_TEST_CASE(batch_mismatch) {
  tensor<float, heads_t> q(2, 3), k(3, 3);
  BOOST_CHECK_EXCEPTION(scores(q, k), shape_error,
                        [](const shape_error& e) { return names(e, "is 2", "is 3"); });
}

BOOST_AUTO_TEST_CASE(padding_of_the_wrong_length_or_batch) {
  tensor<float, heads_t> q(2, 3), k(2, 7);
  tensor<std::uint8_t, shape<batch<>, seq<>>> short_pad(2, 6), wrong_batch(1, 7);
  BOOST_CHECK_EXCEPTION(mask(scores(q, k), ignore_keys(short_pad)), shape_error,
                        [](const shape_error& e) { return names(e, "is 6", "is 7"); });
  BOOST_CHECK_EXCEPTION(mask(scores(q, k), ignore_keys(wrong_batch)), shape_error,
                        [](const shape_error& e) { return names(e, "is 1", "is 2"); });
}

BOOST_AUTO_TEST_CASE(pair_mask_of_the_wrong_extents) {
  tensor<float, heads_t> q(1, 3), k(1, 7);
  tensor<bool, shape<seq<>, seq<>>> m(4, 7);
  tensor<float, shape<seq<>, seq<>>> a(3, 8);
  BOOST_CHECK_EXCEPTION(mask(scores(q, k), ignore_where(m)), shape_error,
                        [](const shape_error& e) { return names(e, "is 4", "is 3"); });
  BOOST_CHECK_EXCEPTION(mask(scores(q, k), add_to_scores(a)), shape_error,
                        [](const shape_error& e) { return names(e, "is 8", "is 7"); });
}

BOOST_AUTO_TEST_CASE(module_with_k_and_v_of_different_lengths) {
  multi_head_attention<8, 2> mha;
  tensor<float, shape<batch<>, seq<>, model<8>>> x(1, 4), k(1, 5), v(1, 6);
  BOOST_CHECK_THROW(mha.forward(x, k, v), shape_error);
}

BOOST_AUTO_TEST_CASE(output_of_the_wrong_extents_is_untouched) {
  multi_head_attention<8, 2> mha;
  tensor<float, shape<batch<>, seq<>, model<8>>> x(1, 4), out(1, 5);
  out.fill(42.0f);
  BOOST_CHECK_EXCEPTION(evaluate(mha.forward(x), unfused, out), shape_error,
                        [](const shape_error& e) {
                          return names(e, "the output tensor has extents (1, 5, 8)",
                                       "the expression has (1, 4, 8): axis 1 (seq) differs");
                        });
  for (float y : out) BOOST_TEST(y == 42.0f);
  // The batch axis, under the fused policy, named as such.
  tensor<float, shape<batch<>, seq<>, model<8>>> two(2, 4);
  two.fill(42.0f);
  BOOST_CHECK_EXCEPTION(
      evaluate(mha.forward(x), fused, two), shape_error,
      [](const shape_error& e) { return names(e, "axis 0 (batch) differs", "out(e.shape())"); });
  for (float y : two) BOOST_TEST(y == 42.0f);
}
