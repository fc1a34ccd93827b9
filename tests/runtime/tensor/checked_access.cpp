// Element access under ARGUS_CHECKED_ACCESS (config.hpp; on by default without NDEBUG, so in
// the debug and sanitizer builds): x(i, j, ...) of a tensor or a view checks every index against
// its axis's extent and that the elements have storage, and throws naming the axis, its extent
// and the index; before, an index past its extent read past the storage, and a moved-from tensor
// with static extents segfaulted.
// defines: ARGUS_CHECKED_ACCESS=1
// labels: memory
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace argus;

namespace {

/// A predicate: the exception's message contains every one of `parts`.
auto says(std::vector<std::string> parts) {
  return [parts = std::move(parts)](const std::exception& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      if (what.find(p) == std::string::npos) return false;
    return true;
  };
}

using act = shape<batch<>, seq<>, model<16>>;  // (B,SEQ,16)

}  // namespace

BOOST_AUTO_TEST_CASE(the_default_follows_ndebug_and_this_test_checks) {
  static_assert(detail::checked_access);
  tensor<float, act> x(2, 3);
  static_assert(!noexcept(x(0, 0, 0)));
  static_assert(!noexcept(x.view()(0, 0, 0)));
}

BOOST_AUTO_TEST_CASE(every_index_in_range_reads_and_writes_as_unchecked) {
  tensor<float, act> x(2, 3);
  float n = 0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t m = 0; m < 16; ++m) x(b, s, m) = n++;
  for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(x.data()[i] == static_cast<float>(i));
  const auto v = x.view();
  BOOST_TEST(v(1, 2, 15) == 95.0f);
  BOOST_TEST(std::as_const(x)(1, 0, 3) == 51.0f);
  // A strided view: split heads of x, (B,4,SEQ,4), checked against its own extents.
  const auto h = split_heads_view<4>(x);
  BOOST_TEST(h(1, 3, 2, 3) == x(1, 2, 15));
  BOOST_CHECK_EXCEPTION((void)h(1, 4, 0, 0), std::out_of_range,
                        says({"axis 1 (head)", "is 4", "extent is 4"}));
}

BOOST_AUTO_TEST_CASE(an_index_past_its_extent_throws_out_of_range_naming_the_axis) {
  tensor<float, act> x(2, 3);
  BOOST_CHECK_EXCEPTION(x(1, 3, 0) = 1, std::out_of_range,
                        says({"argus::tensor(i, j, ...)", "axis 1 (seq)", "is 3", "extent is 3"}));
  BOOST_CHECK_EXCEPTION(x(0, 0, 16) = 1, std::out_of_range,
                        says({"axis 2 (model)", "is 16", "extent is 16"}));
  BOOST_CHECK_EXCEPTION(x(-1, 0, 0) = 1, std::out_of_range, says({"axis 0 (batch)", "is -1"}));
  enum index : int { minus_one = -1 };  // an index type of the user's, shown as its value
  BOOST_CHECK_EXCEPTION(x(0, minus_one, 0) = 1, std::out_of_range,
                        says({"axis 1 (seq)", "is -1,"}));
  BOOST_CHECK_EXCEPTION((void)x.view()(2, 0, 0), std::out_of_range,
                        says({"argus::tensor_view(i, j, ...)", "axis 0 (batch)", "is 2"}));
  // An empty tensor has no element at all.
  tensor<float, act> empty(0, 3);
  BOOST_CHECK_EXCEPTION((void)empty(0, 0, 0), std::out_of_range, says({"axis 0 (batch)"}));
  for (float v : x) BOOST_TEST(v == 0.0f);  // nothing was written
}

BOOST_AUTO_TEST_CASE(a_tensor_without_storage_throws_shape_error) {
  tensor<float, shape<batch<1>, seq<2>, model<4>>> s;  // every extent static
  const auto taken = std::move(s);
  BOOST_CHECK_EXCEPTION((void)s(0, 0, 0), shape_error, says({"moved-from"}));
  const tensor_view<const float, act> null_view(nullptr, 1, 1);
  BOOST_CHECK_EXCEPTION((void)null_view(0, 0, 0), shape_error, says({"null pointer"}));
  BOOST_TEST(taken(0, 1, 3) == 0.0f);
}
