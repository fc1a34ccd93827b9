// argus/tensor/tensor.hpp -- tensor layer: an owning, aligned, row-major tensor.
//
//     argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<512>>>
//         x(2, 128);                                                  // (BATCH,SEQ,D_MODEL)
//
// Expressions hold owning tensors by reference: keep a tensor alive while an expression
// that names it is in use, and assign results to a tensor, not to `auto` of an expression.
#pragma once

#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <utility>

namespace argus {

namespace detail {
struct tensor_access;
}  // namespace detail

template <class T, Shape S>
class tensor {
  static_assert(std::is_arithmetic_v<T> && !std::is_const_v<T>,
                "argus::tensor<T, Shape> holds arithmetic values such as float, double, uint8_t");

 public:
  using value_type = T;
  using shape_type = S;

  /// Static extents from the type, run-time extents 0 (an empty tensor, as std::extents and
  /// Eigen's dynamic matrices default to); elements are zero.
  tensor() : tensor(S{}) {}
  /// From the run-time extents, in axis order; elements are zero. Giving a different number
  /// of extents than S has run-time axes is a compile error naming
  /// run_time_extents_match_dyn_axes.
  // clang-format off
  template <class... I>
    requires(sizeof...(I) > 0 && (std::is_integral_v<I> && ...))
  explicit tensor(I... dynamic) : tensor(detail::shape_from_run_time_extents<S>(dynamic...)) {}
  // clang-format on
  /// From a shape object; elements are zero.
  explicit tensor(const S& s) : shape_(s), buffer_(s.size()) {}

  tensor(const tensor&) = default;
  tensor& operator=(const tensor&) = default;
  /// A moved-from tensor is empty: its run-time extents are 0, and it has no storage. When
  /// every extent is static it keeps them, and evaluating an expression that reads it throws
  /// shape_error ("moved-from tensor").
  tensor(tensor&& o) noexcept
      : shape_(std::exchange(o.shape_, S{})), buffer_(std::move(o.buffer_)) {}
  tensor& operator=(tensor&& o) noexcept {
    if (this != &o) {
      shape_ = std::exchange(o.shape_, S{});
      buffer_ = std::move(o.buffer_);
    }
    return *this;
  }
  ~tensor() = default;

  static constexpr std::size_t rank() noexcept { return S::rank(); }
  const S& shape() const noexcept { return shape_; }
  std::size_t extent(std::size_t i) const noexcept { return shape_.extent(i); }
  std::size_t size() const noexcept { return buffer_.size(); }
  T* data() noexcept { return buffer_.data(); }
  const T* data() const noexcept { return buffer_.data(); }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size(); }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size(); }

  tensor_view<T, S> view() noexcept { return {data(), shape_}; }
  tensor_view<const T, S> view() const noexcept { return {data(), shape_}; }
  operator tensor_view<T, S>() noexcept { return view(); }
  operator tensor_view<const T, S>() const noexcept { return view(); }

  // clang-format off
  template <class... I>
    requires(sizeof...(I) == S::rank())
  T& operator()(I... idx) noexcept { return data()[layout<S>::row_major(shape_)(idx...)]; }
  // clang-format on
  // clang-format off
  template <class... I>
    requires(sizeof...(I) == S::rank())
  const T& operator()(I... idx) const noexcept {
    // clang-format on
    return data()[layout<S>::row_major(shape_)(idx...)];
  }

  /// Sets every element to v.
  void fill(T v) noexcept { std::fill(begin(), end(), v); }

 private:
  friend struct detail::tensor_access;
  tensor(const S& s, aligned_buffer<T>&& b) noexcept : shape_(s), buffer_(std::move(b)) {}

  S shape_;
  aligned_buffer<T> buffer_;
};

namespace detail {
/// For evaluators: a tensor that takes over a row-major buffer of exactly s.size() elements.
struct tensor_access {
  template <class T, Shape S>
  static tensor<T, S> adopt(const S& s, aligned_buffer<T>&& b) noexcept {
    return tensor<T, S>(s, std::move(b));
  }
};
}  // namespace detail

}  // namespace argus
