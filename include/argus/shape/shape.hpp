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
#include <limits>
#include <string>
#include <type_traits>

namespace argus {

namespace detail {

/// The most elements a shape describes: PTRDIFF_MAX, so that every offset of a row-major
/// tensor of the shape is a valid pointer difference.
inline constexpr std::size_t max_elements =
    static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());

/// Whether the product of the non-zero values of e is at most max_elements. Zeros are left
/// out so that an empty tensor of extents (2^62, 0, 16) is refused too: a loop over its
/// other axes would not end in any useful time.
template <std::size_t R>
constexpr bool element_count_fits(const std::array<std::size_t, R>& e) noexcept {
  std::size_t n = 1;
  for (const std::size_t x : e)
    if (x != 0) {
      if (n > max_elements / x) return false;
      n *= x;
    }
  return true;
}

/// "(a, b, c)", the extents joined by `separator`.
template <std::size_t R>
std::string extents_text(const std::array<std::size_t, R>& e, const char* separator = ", ") {
  // Appends only: GCC 12 warns falsely (-Wrestrict, bug 105651) on operator+ chains at -O3.
  std::string s = "(";
  for (std::size_t i = 0; i < R; ++i) {
    if (i) s += separator;
    s += std::to_string(e[i]);
  }
  s += ')';
  return s;
}

/// Throws shape_error naming the extents when they describe more than max_elements elements.
template <std::size_t R>
constexpr void check_element_count(const std::array<std::size_t, R>& e) {
  if (!element_count_fits(e))
    throw shape_error("argus::shape: the extents " + extents_text(e) +
                      " describe too many elements: the product of the non-zero extents must "
                      "be at most " +
                      std::to_string(max_elements) + " (PTRDIFF_MAX)");
}

/// Throws shape_error when the run-time extent at axis `axis` is a negative number.
template <class I>
constexpr void check_not_negative(I value, std::size_t axis) {
  if constexpr (std::is_signed_v<I>)
    if (value < I(0))
      throw shape_error("argus::shape: the run-time extent of axis " + std::to_string(axis) +
                        " is " + std::to_string(value) + "; an extent must be at least 0");
}

}  // namespace detail

/// A shape's static extents (run-time ones count as 0 here) describe at most PTRDIFF_MAX
/// elements, zeros left out; run-time extents are checked when a shape is made (shape_error).
template <std::size_t... Extents>
concept static_extents_fit_in_a_tensor = detail::element_count_fits(
    std::array<std::size_t, sizeof...(Extents)>{(Extents == dyn ? 0 : Extents)...});

/// shape::from_extents({...}) takes one extent per axis of the shape.
template <std::size_t Given, std::size_t Rank>
concept extent_count_equals_rank = Given == Rank;

/// shape<...>(extents...), tensor(extents...), tensor_view(p, extents...): one run-time extent
/// for each run-time (dyn) axis of the shape, in axis order.
template <std::size_t Given, std::size_t DynAxes>
concept run_time_extents_match_dyn_axes = Given == DynAxes;

/// shape<...>(extents...), tensor(extents...), tensor_view(p, extents...): the run-time extents
/// are integers, of any integer type (a negative one throws shape_error).
template <class... I>
concept run_time_extents_are_integers = (std::is_integral_v<I> && ...);

template <Axis... Axes>
class shape {
  static_assert(static_extents_fit_in_a_tensor<Axes::static_extent...>,
                "static_extents_fit_in_a_tensor: the product of a shape's static extents must "
                "be at most PTRDIFF_MAX elements");

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

  /// From the run-time extents only, in axis order (as std::extents). A negative extent, or
  /// extents whose product (zeros left out) exceeds PTRDIFF_MAX, throw shape_error.
  ///
  /// Checks, in order, reporting the first that fails (a static_assert firewall: any arguments
  /// are taken, so that a misuse names its rule rather than listing candidates; copies and the
  /// default constructor, not templates, win their ties): the extents are integers
  /// (run_time_extents_are_integers); one per dyn axis (run_time_extents_match_dyn_axes).
  template <class... I>
  constexpr explicit shape(I... dynamic) : extents_(statics_) {
    if constexpr (!run_time_extents_are_integers<I...>) {
      static_assert(run_time_extents_are_integers<I...>,
                    "run_time_extents_are_integers: argus::shape<Axes...>(extents...) takes the "
                    "run-time extents as integers, in axis order");
    } else if constexpr (!run_time_extents_match_dyn_axes<sizeof...(I), rank_dynamic()>) {
      static_assert(run_time_extents_match_dyn_axes<sizeof...(I), rank_dynamic()>,
                    "run_time_extents_match_dyn_axes: argus::shape<Axes...>(extents...) takes one "
                    "run-time extent per dyn axis (batch<>, seq<>), in axis order");
    } else {
      std::size_t k = 0;
      ((detail::check_not_negative(dynamic, dynamic_axis(k)),
        extents_[dynamic_axis(k++)] = static_cast<std::size_t>(dynamic)),
       ...);
      detail::check_element_count(extents_);
    }
  }

  /// From every extent, as a braced list: from_extents({2, 9, 512}). One extent per axis
  /// (extent_count_equals_rank): as a std::array, a shorter list would be filled with zeros.
  template <std::size_t N>
  static constexpr shape from_extents(const std::size_t (&all)[N]) {
    if constexpr (!extent_count_equals_rank<N, rank()>) {
      static_assert(extent_count_equals_rank<N, rank()>,
                    "extent_count_equals_rank: shape<Axes...>::from_extents({...}) takes one "
                    "extent per axis, static ones included");
      return shape{};
    } else {
      std::array<std::size_t, rank()> a{};
      for (std::size_t i = 0; i < rank(); ++i) a[i] = all[i];
      return from_extents(a);
    }
  }

  /// From every extent; a static one that differs from the given value, or extents whose
  /// product (zeros left out) exceeds PTRDIFF_MAX, throw shape_error.
  static constexpr shape from_extents(const std::array<std::size_t, rank()>& all) {
    shape s = uninitialised();
    for (std::size_t i = 0; i < rank(); ++i) {
      if (statics_[i] != dyn)
        detail::check_extents_agree("shape", "static extent", statics_[i], "given extent", all[i]);
      s.extents_[i] = all[i];
    }
    detail::check_element_count(s.extents_);
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
  /// The position of the k-th run-time axis.
  static constexpr std::size_t dynamic_axis(std::size_t k) noexcept {
    for (std::size_t i = 0; i < rank(); ++i)
      if (statics_[i] == dyn && k-- == 0) return i;
    return rank();
  }
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

/// True when S(extents...) compiles with extents of types I... (the rules of the constructor,
/// in its order, without the report): for in-process tests.
template <class S, class... I>
concept shape_accepts_run_time_extents = Shape<S> && run_time_extents_are_integers<I...> &&
    run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>;

namespace detail {
/// The kinds of S's axes in words, in axis order (axis_kind_name).
template <class S>
inline constexpr std::array<const char*, 0> axis_kind_names{};
template <class... A>
inline constexpr std::array<const char*, sizeof...(A)> axis_kind_names<shape<A...>>{
    axis_kind_name<A>()...};

/// Throws shape_error unless `given` has the extents of `expected`, naming both shapes and the
/// first axis they differ along: "<op>: <what_given> has extents (2, 7, 16) but <what_expected>
/// has (2, 9, 16): axis 1 (seq) differs; <hint>".
template <class S>
void check_shapes_agree(const char* op, const char* what_given, const S& given,
                        const char* what_expected, const S& expected, const char* hint) {
  for (std::size_t i = 0; i < S::rank(); ++i)
    if (given.extent(i) != expected.extent(i)) {
      std::string m = op;
      m += ": ";
      m += what_given;
      m += " has extents ";
      m += extents_text(given.extents());
      m += " but ";
      m += what_expected;
      m += " has ";
      m += extents_text(expected.extents());
      m += ": axis ";
      m += std::to_string(i);
      m += " (";
      m += axis_kind_names<S>[i];
      m += ") differs; ";
      m += hint;
      throw shape_error(m);
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
