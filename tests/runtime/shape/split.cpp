// shape/split.hpp: split-heads and merge-heads are layout algebra; their post-conditions
// hold for every coordinate, static and run-time extents, row-major and strided layouts.
// labels: memory
#include <argus/shape/split.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <tuple>

using namespace argus;

template <std::size_t B, std::size_t S, std::size_t D, std::size_t H>
struct config {
  static constexpr std::size_t batch_n = B, seq_n = S, d = D, heads = H;
};
using configs = std::tuple<config<1, 4, 8, 2>, config<2, 5, 12, 3>, config<3, 7, 512, 8>,
                           config<2, 3, 24, 6>, config<1, 1, 16, 16>, config<2, 9, 16, 1>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(split_then_merge_is_identity_on_every_coordinate, C, configs) {
  using S = shape<batch<>, seq<>, model<C::d>>;
  const auto l = layout<S>::row_major(S(C::batch_n, C::seq_n));
  const auto s = split_layout<C::heads>(l);
  constexpr std::size_t dk = C::d / C::heads;
  BOOST_TEST(s.extent(0) == C::batch_n);
  BOOST_TEST(s.extent(1) == C::heads);
  BOOST_TEST(s.extent(2) == C::seq_n);
  BOOST_TEST(s.extent(3) == dk);
  const auto m = merge_layout(s);
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST((*m == l));
  for (std::size_t b = 0; b < C::batch_n; ++b)
    for (std::size_t h = 0; h < C::heads; ++h)
      for (std::size_t i = 0; i < C::seq_n; ++i)
        for (std::size_t d = 0; d < dk; ++d) {
          // post: split(l)(b, h, s, d) == l(b, s, h * DK + d)
          BOOST_TEST(s(b, h, i, d) == l(b, i, h * dk + d));
          // post: merge(split(l))(b, s, h * DK + d) == split(l)(b, h, s, d)
          BOOST_TEST((*m)(b, i, h * dk + d) == s(b, h, i, d));
        }
}

BOOST_AUTO_TEST_CASE(split_of_a_strided_layout_keeps_the_strides) {
  // A (2, 5, 16) window with row stride 48 into a wider (2, 5, 48) buffer: the q part of a
  // packed qkv projection.
  using S = shape<batch<2>, seq<5>, model<16>>;
  const layout<S> l{S{}, {5 * 48, 48, 1}};
  const auto s = split_layout<4>(l);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t d = 0; d < 4; ++d) BOOST_TEST(s(b, h, i, d) == l(b, i, h * 4 + d));
}

BOOST_AUTO_TEST_CASE(merge_of_separated_heads_is_not_a_view) {
  // Heads stored one after another, (B, H, S, DK) row-major: merging needs a copy.
  using S = shape<batch<1>, head<4>, seq<3>, head_dim<8>>;
  const auto l = layout<S>::row_major(S{});
  BOOST_TEST(!merge_layout(l).has_value());
}

BOOST_AUTO_TEST_CASE(shape_from_extents_checks_static_extents) {
  using S = shape<batch<>, seq<4>, model<8>>;
  BOOST_CHECK_NO_THROW(S::from_extents({3, 4, 8}));
  BOOST_CHECK_THROW(S::from_extents({3, 5, 8}), shape_error);
  const S s(3);
  BOOST_TEST(s.size() == 96u);
  BOOST_TEST(S::rank_dynamic() == 1u);
  BOOST_TEST(S::static_size() == dyn);
  BOOST_TEST((shape<seq<4>, model<8>>::static_size()) == 32u);
}

BOOST_AUTO_TEST_CASE(row_major_ignores_the_strides_of_extents_of_one) {
  // Row-major means the elements occupy [0, size) in row-major order; no coordinate steps
  // along an extent of 1, so its stride does not matter: heads split from one position, or
  // into one head, are row-major (a view, not a copy); from two positions into two heads not.
  using S = shape<batch<>, seq<>, model<16>>;
  BOOST_TEST(split_layout<4>(layout<S>::row_major(S(3, 1))).is_row_major());
  BOOST_TEST(split_layout<1>(layout<S>::row_major(S(3, 5))).is_row_major());
  BOOST_TEST(!split_layout<2>(layout<S>::row_major(S(3, 2))).is_row_major());
  using T = shape<batch<>, seq<>, model<3>>;
  BOOST_TEST((layout<T>{T(1, 2), {999, 3, 1}}.is_row_major()));  // a batch of one, any stride
  BOOST_TEST(!(layout<T>{T(2, 2), {999, 3, 1}}.is_row_major()));
  BOOST_TEST(!(layout<T>{T(1, 2), {6, 4, 1}}.is_row_major()));  // rows 4 apart: a gap
  BOOST_TEST(!(layout<T>{T(1, 3), {9, 1, 3}}.is_row_major()));  // transposed
}
