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
  /// Row-major view of p with the given run-time extents, in axis order (as std::mdspan);
  /// the count must be S's number of run-time axes (run_time_extents_match_dyn_axes).
  // clang-format off
  template <class... I>
    requires(sizeof...(I) > 0 && (std::is_integral_v<I> && ...))
  constexpr tensor_view(T* p, I... dynamic)
      : tensor_view(p, detail::shape_from_run_time_extents<S>(dynamic...)) {}
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

  // clang-format off
  template <class... I>
    requires(sizeof...(I) == S::rank())
  constexpr T& operator()(I... idx) const noexcept {
    // clang-format on
    return data_[layout_(idx...)];
  }

 private:
  T* data_ = nullptr;
  layout_type layout_{};
};

/// The (batch, head, seq, head_dim) view of a (batch, seq, model) view: no copy.
// clang-format off
template <std::size_t Heads, class T, Shape S>
  requires axes_are_batch_seq_model<S> && heads_divide_width<static_extent_v<S, 2>, Heads>
constexpr tensor_view<T, split_heads_shape<Heads, S>> split_heads_view(const tensor_view<T, S>& x) {
  // clang-format on
  return {x.data(), split_layout<Heads>(x.layout())};
}

}  // namespace argus
