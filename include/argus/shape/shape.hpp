// argus/shape/shape.hpp -- shape layer: shape<Axes...>, the extents of a tensor.
//
// A shape is a list of named axes (see extent.hpp). Static extents live in the type; an
// object of the shape holds the run-time ones, as std::extents does:
//
//     argus::shape<argus::batch<>, argus::seq<>, argus::model<512>> s{2, 128};   // (2,128,512)
//
// No storage, no loops over data: this header is vocabulary only.
#pragma once

#include <argus/detail/hana.hpp>
#include <argus/diagnostics/check.hpp>
#include <argus/shape/extent.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

namespace argus {

template <Axis... Axes>
class shape {
 public:
  using index_type = std::size_t;
  static constexpr std::size_t rank() noexcept { return sizeof...(Axes); }
  static constexpr std::size_t rank_dynamic() noexcept {
    return ((Axes::static_extent == dyn ? 1u : 0u) + ... + 0u);
  }
  static constexpr std::size_t static_extent(std::size_t i) noexcept { return statics_[i]; }

  /// The axis type at position I.
  template <std::size_t I>
  using axis = std::tuple_element_t<I, std::tuple<Axes...>>;

  /// Static extents from the type; run-time extents 0 (as std::extents).
  constexpr shape() noexcept : extents_(statics_) {
    for (auto& e : extents_)
      if (e == dyn) e = 0;
  }

  /// From the run-time extents only, in axis order (as std::extents).
  // clang-format off
  template <class... I>
    requires(sizeof...(I) == rank_dynamic() && rank_dynamic() > 0 &&
             (std::is_convertible_v<I, std::size_t> && ...))
  constexpr explicit shape(I... dynamic) noexcept : extents_(statics_) {
    // clang-format on
    const std::array<std::size_t, sizeof...(I)> d{static_cast<std::size_t>(dynamic)...};
    std::size_t k = 0;
    for (std::size_t i = 0; i < rank(); ++i)
      if (statics_[i] == dyn) extents_[i] = d[k++];
  }

  /// From every extent; a static one that differs from the given value throws shape_error.
  static constexpr shape from_extents(const std::array<std::size_t, rank()>& all) {
    shape s = uninitialised();
    for (std::size_t i = 0; i < rank(); ++i) {
      if (statics_[i] != dyn)
        detail::check_extents_agree("shape", "static extent", statics_[i], "given extent", all[i]);
      s.extents_[i] = all[i];
    }
    return s;
  }

  constexpr std::size_t extent(std::size_t i) const noexcept { return extents_[i]; }
  constexpr const std::array<std::size_t, rank()>& extents() const noexcept { return extents_; }
  /// Number of elements: the product of the extents.
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (auto e : extents_) n *= e;
    return n;
  }
  /// Number of elements when every extent is static, else dyn.
  static constexpr std::size_t static_size() noexcept { return static_size_; }

  friend constexpr bool operator==(const shape&, const shape&) = default;

 private:
  static constexpr std::array<std::size_t, rank()> statics_{Axes::static_extent...};
  // Compile-time fold over the axes (Hana is the engine, never the vocabulary).
  static constexpr std::size_t static_size_ = detail::hana::fold_left(
      detail::hana::tuple_t<Axes...>, std::size_t{1}, [](std::size_t acc, auto axis_type) {
        using A = typename decltype(axis_type)::type;
        return acc == dyn || A::static_extent == dyn ? dyn : acc * A::static_extent;
      });
  static constexpr shape uninitialised() noexcept { return shape(tag{}); }
  struct tag {};
  constexpr explicit shape(tag) noexcept : extents_{} {}

  std::array<std::size_t, rank()> extents_;
};

namespace detail {
template <class S>
struct is_shape : std::false_type {};
template <class... A>
struct is_shape<shape<A...>> : std::true_type {};
}  // namespace detail

/// A shape<Axes...>.
template <class S>
concept Shape = detail::is_shape<S>::value;

/// shape<...>(extents...), tensor(extents...), tensor_view(p, extents...): one run-time extent
/// for each run-time (dyn) axis of the shape, in axis order.
template <std::size_t Given, std::size_t DynAxes>
concept run_time_extents_match_dyn_axes = Given == DynAxes;

namespace detail {
/// S from its run-time extents; a count other than S's run-time axes is reported here.
template <class S, class... I>
constexpr S shape_from_run_time_extents(I... dynamic) {
  if constexpr (!run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>) {
    static_assert(run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>,
                  "run_time_extents_match_dyn_axes: a tensor or view of this shape takes one "
                  "run-time extent per dyn axis (batch<>, seq<>), in axis order");
    return S{};
  } else {
    return S(dynamic...);
  }
}
}  // namespace detail

/// The axis at position I of shape S.
template <Shape S, std::size_t I>
using axis_t = typename S::template axis<I>;

/// Static extent at position I of shape S (dyn when it is a run-time extent).
template <Shape S, std::size_t I>
inline constexpr std::size_t static_extent_v = axis_t<S, I>::static_extent;

namespace detail {
template <class S, template <std::size_t> class... Kinds>
struct has_axes : std::false_type {};
// clang-format off
template <class... A, template <std::size_t> class... Kinds>
  requires(sizeof...(A) == sizeof...(Kinds))
struct has_axes<shape<A...>, Kinds...>
    : std::bool_constant<(detail::same_axis_kind<A, Kinds<A::static_extent>>::value && ...)> {};
// clang-format on
}  // namespace detail

/// True when the axes of S are, in order, of the given kinds (extents not compared).
template <class S, template <std::size_t> class... Kinds>
concept shape_has_axes = Shape<S> && detail::has_axes<S, Kinds...>::value;

}  // namespace argus
