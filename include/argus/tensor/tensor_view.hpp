// argus/tensor/tensor_view.hpp -- tensor layer: a pointer and a layout, held by value.
//
// A view never owns its elements. Split-heads and merge-heads are views of the same
// memory with other layouts (shape/split.hpp).
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/shape/layout.hpp>
#include <argus/shape/split.hpp>

#include <cstddef>
#include <type_traits>

namespace argus {

/// tensor_view<T, S>(p, extents...): p points to the view's element type (a T*, or a pointer
/// that converts to one: float* for a view of const float).
template <class P, class T>
concept pointer_element_type_is_the_views = std::is_convertible_v<P, T*>;

template <class T, Shape S>
class tensor_view {
 public:
  using value_type = std::remove_const_t<T>;
  using element_type = T;
  using shape_type = S;
  using layout_type = argus::layout<S>;

  constexpr tensor_view() noexcept = default;
  /// Row-major view of p.
  constexpr tensor_view(T* p, const S& s) noexcept : data_(p), layout_(layout_type::row_major(s)) {}
  constexpr tensor_view(T* p, const layout_type& l) noexcept : data_(p), layout_(l) {}
  /// Row-major view of p with the given run-time extents, in axis order (as std::mdspan); of
  /// a shape without dyn axes, tensor_view(p) alone (explicit: a pointer does not convert to
  /// a view implicitly).
  ///
  /// Checks, in order, reporting the first that fails (a static_assert firewall: it takes any
  /// pointer and extents, but leaves (p, s) and (p, l) to the constructors above, and of a
  /// single argument takes only a pointer, leaving copies and conversions to theirs): p
  /// converts to T* (pointer_element_type_is_the_views); the extents are integers
  /// (run_time_extents_are_integers); one per dyn axis (run_time_extents_match_dyn_axes).
  // clang-format off
  template <class P, class... I>
    requires((sizeof...(I) > 0 &&
              !(sizeof...(I) == 1 && std::is_convertible_v<P, T*> &&
                ((std::is_same_v<I, S> || std::is_same_v<I, layout_type>) || ...))) ||
             (sizeof...(I) == 0 && std::is_pointer_v<P>))
  constexpr explicit(sizeof...(I) == 0) tensor_view(P p, I... dynamic)
      : tensor_view(from_run_time_extents(p, dynamic...)) {}
  // clang-format on
  /// A view of const elements from a view of mutable ones.
  // clang-format off
  template <class U>
    requires(std::is_const_v<T> && std::is_same_v<const U, T>)
  constexpr tensor_view(const tensor_view<U, S>& o) noexcept : data_(o.data()), layout_(o.layout()) {}
  // clang-format on

  static constexpr std::size_t rank() noexcept { return S::rank(); }
  constexpr T* data() const noexcept { return data_; }
  constexpr const layout_type& layout() const noexcept { return layout_; }
  constexpr const S& shape() const noexcept { return layout_.shape; }
  constexpr std::size_t extent(std::size_t i) const noexcept { return layout_.extent(i); }
  constexpr std::size_t stride(std::size_t i) const noexcept { return layout_.stride[i]; }
  constexpr std::size_t size() const noexcept { return layout_.shape.size(); }

  /// The element at (i, j, ...): one index per axis (one_index_per_axis).
  /// Under ARGUS_CHECKED_ACCESS (config.hpp) each index is checked against its extent, and a
  /// view of a null pointer throws.
  template <class... I>
  constexpr T& operator()(I... idx) const noexcept(!detail::checked_access) {
    if constexpr (!one_index_per_axis<sizeof...(I), S::rank()>) {
      static_assert(one_index_per_axis<sizeof...(I), S::rank()>,
                    "one_index_per_axis: argus::tensor_view<T, S>(i, j, ...) takes one index per "
                    "axis of S");
      return *data_;
    } else if constexpr (!indices_are_integers<I...>) {
      static_assert(indices_are_integers<I...>,
                    "indices_are_integers: argus::tensor_view<T, S>(i, j, ...) takes integer "
                    "indices");
      return *data_;
    } else {
      if constexpr (detail::checked_access)
        if (!std::is_constant_evaluated())
          detail::check_access("argus::tensor_view(i, j, ...)", shape(), data_, idx...);
      return data_[layout_(idx...)];
    }
  }

 private:
  /// The view of tensor_view(p, extents...), whose rules it reports.
  template <class P, class... I>
  static constexpr tensor_view from_run_time_extents(P p, I... dynamic) {
    if constexpr (!pointer_element_type_is_the_views<P, T>) {
      static_assert(pointer_element_type_is_the_views<P, T>,
                    "pointer_element_type_is_the_views: argus::tensor_view<T, S>(p, extents...) "
                    "views elements of type T: p is a T*");
      return {};
    } else if constexpr (!run_time_extents_are_integers<I...>) {
      static_assert(run_time_extents_are_integers<I...>,
                    "run_time_extents_are_integers: argus::tensor_view<T, S>(p, extents...) takes "
                    "the run-time extents as integers, in axis order (or one S, or a layout)");
      return {};
    } else if constexpr (!run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>) {
      static_assert(run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>,
                    "run_time_extents_match_dyn_axes: argus::tensor_view<T, S>(p, extents...) "
                    "takes one run-time extent per dyn axis of S (batch<>, seq<>), in axis order");
      return {};
    } else {
      return tensor_view(static_cast<T*>(p), S(dynamic...));
    }
  }

  T* data_ = nullptr;
  layout_type layout_{};
};

namespace detail {
template <class X>
struct is_tensor_view : std::false_type {};
template <class T, class S>
struct is_tensor_view<tensor_view<T, S>> : std::true_type {};
/// What split_heads_view<H>(x) returns where a rule is broken (and reported).
struct rejected_view {};
/// x is a named tensor: an lvalue whose view() is a tensor_view (argus::tensor, or a class
/// derived from it).
template <class X>
concept names_a_tensor = requires(X x) {
  requires std::is_lvalue_reference_v<X>;
  requires is_tensor_view<std::remove_cvref_t<decltype(x.view())>>::value;
};
}  // namespace detail

/// split_heads_view<H>(x) views x's memory: x is a tensor_view, or a tensor with a name (an
/// lvalue: a temporary tensor's memory is gone at the end of the statement). X is how the call
/// received x.
template <class X>
concept split_heads_view_takes_a_view_or_a_named_tensor =
    detail::is_tensor_view<std::remove_cvref_t<X>>::value || detail::names_a_tensor<X>;

/// The (batch, head, seq, head_dim) view of a (batch, seq, model) view or named tensor: no
/// copy. Checks, reporting the first that fails: x is a view or a named tensor
/// (split_heads_view_takes_a_view_or_a_named_tensor); its axes are (batch, seq, model)
/// (axes_are_batch_seq_model); the model width is static, as the head width is part of the
/// view's type (model_width_is_static); Heads divides it (heads_divide_width).
template <std::size_t Heads, class X>
constexpr auto split_heads_view(X&& x) {
  if constexpr (!split_heads_view_takes_a_view_or_a_named_tensor<X&&>) {
    static_assert(split_heads_view_takes_a_view_or_a_named_tensor<X&&>,
                  "split_heads_view_takes_a_view_or_a_named_tensor: argus::split_heads_view<H>(x) "
                  "views x's memory: x is an argus::tensor_view, or an argus::tensor with a name "
                  "(a temporary's memory is gone at the end of the statement)");
    return detail::rejected_view{};
  } else {
    const auto v = [&] {
      if constexpr (detail::is_tensor_view<std::remove_cvref_t<X>>::value)
        return x;
      else
        return x.view();
    }();
    using V = std::remove_cvref_t<decltype(v)>;
    using S = typename V::shape_type;
    using T = typename V::element_type;
    if constexpr (!axes_are_batch_seq_model<S>) {
      static_assert(axes_are_batch_seq_model<S>,
                    "axes_are_batch_seq_model: argus::split_heads_view<H>(x) splits the model axis "
                    "of a (batch, seq, model) view");
      return detail::rejected_view{};
    } else if constexpr (!model_width_is_static<static_extent_v<S, 2>>) {
      static_assert(model_width_is_static<static_extent_v<S, 2>>,
                    "model_width_is_static: argus::split_heads_view<H>(x) needs x's model width "
                    "as a static extent (model<N>): the head width N / H is part of the view's "
                    "type");
      return detail::rejected_view{};
    } else if constexpr (!heads_divide_width<static_extent_v<S, 2>, Heads>) {
      static_assert(heads_divide_width<static_extent_v<S, 2>, Heads>,
                    "heads_divide_width: argus::split_heads_view<H>(x) cuts x's model width into H "
                    "heads of equal width");
      return detail::rejected_view{};
    } else {
      return tensor_view<T, split_heads_shape<Heads, S>>{v.data(), split_layout<Heads>(v.layout())};
    }
  }
}

}  // namespace argus
