// shape/shape.hpp: run-time extents that cannot describe a tensor throw shape_error when the
// shape is made (a tensor, a view or from_extents), naming the numbers: a negative extent
// (say a length computed as count - 1 with count 0), or extents whose product, zeros left out,
// exceeds PTRDIFF_MAX (it would wrap around: a tensor of (2^30, 2^30, 16) got no storage and
// every evaluator then read through a null pointer). Extents at the bound are accepted.
// labels: memory
#include <argus/shape/shape.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace argus;

namespace {

using activation = shape<batch<>, seq<>, model<16>>;
constexpr std::size_t max_elements = std::numeric_limits<std::ptrdiff_t>::max();
constexpr std::size_t two_to(unsigned k) { return std::size_t{1} << k; }

/// f throws shape_error whose message holds every part.
void expect_shape_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const shape_error& e) {
    const std::string what = e.what();
    for (const std::string& part : parts)
      BOOST_TEST(what.find(part) != std::string::npos, "'" << part << "' in: " << what);
    return;
  }
  BOOST_ERROR("no shape_error thrown; expected one naming " << parts.front());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_negative_run_time_extent_throws_naming_its_axis_and_value) {
  expect_shape_error([] { activation s(-1, 3); }, {"argus::shape", "axis 0", "-1", "at least 0"});
  expect_shape_error([] { activation s(2, -3L); }, {"axis 1", "-3"});
  expect_shape_error([] { tensor<float, activation> x(2, -1); }, {"axis 1", "-1"});
  float storage[16] = {};
  expect_shape_error([&] { tensor_view<float, activation> v(storage, -2, 1); }, {"axis 0", "-2"});
  // The axis is the shape's position, run-time axes counted among the static ones.
  expect_shape_error([] { shape<model<4>, seq<>> s(-5); }, {"axis 1", "-5"});
}

BOOST_AUTO_TEST_CASE(extents_whose_product_wraps_around_throw_naming_them) {
  const std::string bound = std::to_string(max_elements);
  // 2^30 · 2^30 · 16 = 2^64: wrapped, size() was 0.
  expect_shape_error([] { tensor<float, activation> x(two_to(30), two_to(30)); },
                     {"argus::shape", "(1073741824, 1073741824, 16)", "too many elements", bound});
  // An unsigned -1, 2^64 - 1 (· 1 · 16 wraps to 2^64 - 16).
  expect_shape_error([] { activation s(std::numeric_limits<std::size_t>::max(), std::size_t{1}); },
                     {"18446744073709551615"});
  float storage[16] = {};
  expect_shape_error([&] { tensor_view<float, activation> v(storage, two_to(32), two_to(28)); },
                     {"(4294967296, 268435456, 16)"});
  expect_shape_error(
      [] {
        (void)activation::from_extents({two_to(40), two_to(40), 16});
      },
      {"(1099511627776, 1099511627776, 16)"});
  // Zeros are left out of the product: an empty tensor of (2^62, 0, 16) is refused too.
  expect_shape_error([] { activation s(two_to(62), std::size_t{0}); },
                     {"(4611686018427387904, 0, 16)"});
}

BOOST_AUTO_TEST_CASE(extents_up_to_the_bound_are_accepted) {
  // PTRDIFF_MAX = 2^63 - 1 elements exactly (no storage is made: a shape only).
  const shape<seq<>> longest(max_elements);
  BOOST_TEST(longest.size() == max_elements);
  BOOST_CHECK_THROW(shape<seq<>>(max_elements + 1), shape_error);
  // Zeros left out: 2^58 · 16 = 2^62 fits, 2^59 · 16 = 2^63 does not.
  const activation empty(two_to(58), std::size_t{0});
  BOOST_TEST(empty.size() == 0u);
  BOOST_CHECK_THROW(activation(two_to(59), std::size_t{0}), shape_error);
  const activation large(two_to(58), std::size_t{1});
  BOOST_TEST(large.size() == two_to(62));
  BOOST_TEST(activation::from_extents({3, 5, 16}).size() == 240u);
  const tensor<float, activation> x(2, 3);
  BOOST_TEST(x.size() == 96u);
  // Unsigned and signed extents in range give the same shape.
  BOOST_TEST((activation(2, 3) == activation(std::size_t{2}, 3u)));
  static_assert(shape<seq<>, model<4>>(5).size() == 20, "usable in constant expressions");
}

BOOST_AUTO_TEST_CASE(a_view_of_static_extents_takes_the_pointer_alone) {
  // As std::mdspan<float, extents<2, 3, 4>>(p): no extents to give, so tensor_view(p) (it was
  // "no matching function"; tensor_view(p, S{}) is the same view). Explicit: a pointer does
  // not convert to a view.
  using fixed = shape<batch<2>, seq<3>, model<4>>;
  static_assert(!std::is_convertible_v<float*, tensor_view<float, fixed>>);
  std::array<float, 24> storage{};
  const tensor_view<float, fixed> v(storage.data());
  BOOST_TEST(v.data() == storage.data());
  BOOST_TEST(v.extent(0) == 2u);
  BOOST_TEST(v.stride(0) == 12u);
  BOOST_TEST(v.stride(1) == 4u);
  v(1, 2, 3) = 7.0f;
  BOOST_TEST(storage[23] == 7.0f);
  const tensor_view<const float, fixed> c(storage.data());
  BOOST_TEST(c(1, 2, 3) == 7.0f);
  const tensor_view<float, fixed> same(storage.data(), fixed{});
  BOOST_TEST(same.layout().stride == v.layout().stride);
}
