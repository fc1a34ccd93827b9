// argus/tensor/tensor.hpp -- tensor layer: an owning, aligned, row-major tensor.
//
//     argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<512>>>
//         x(2, 128);                                                  // (BATCH,SEQ,D_MODEL)
//
// Expressions hold owning tensors by reference: keep a tensor alive while an expression
// that names it is in use, and assign results to a tensor, not to `auto` of an expression.
// An expression that outlives its tensor's storage (the tensor destroyed, moved into, or
// assigned a tensor of another shape) throws shape_error when evaluated, and reads nothing.
#pragma once

#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <utility>

namespace argus {

/// tensor<T, S> holds arithmetic values: float, double, uint8_t, bool, ...
template <class T>
concept value_type_is_arithmetic = std::is_arithmetic_v<T>;
/// tensor<T, S> owns its elements, so T is not const (read-only elements: tensor_view<const T, S>).
template <class T>
concept value_type_is_not_const = !std::is_const_v<T>;
/// x.view() of a tensor that is not a temporary: a temporary's storage goes at the end of the
/// statement, and a view of it would point at freed memory (std::ranges refuses iterators into
/// a temporary container for the same reason). X is the tensor's reference type.
template <class X>
concept view_of_a_named_tensor = std::is_lvalue_reference_v<X>;

namespace detail {
struct tensor_access;

/// Whether a tensor's storage is still its. Shared by the tensor and the leaves of the
/// expressions built on it (expr/node.hpp): the tensor sets `released` when its storage goes
/// (it is destroyed, moved into, or assigned a tensor of another shape), and evaluating a leaf
/// whose storage was released throws shape_error instead of reading freed memory. It moves with
/// the storage: a tensor moved from hands it to the tensor moved into, and expressions built on
/// the first read the second's (the same) elements.
struct storage_state {
  bool released = false;
};
/// What a leaf keeps of its tensor: the storage's state, or null (a view of memory owned
/// elsewhere, which is not watched).
using storage_watch = std::shared_ptr<const storage_state>;

/// The rules of tensor<T, S>'s value type, in the order they are reported; true when all hold.
/// With Report, the first broken one is a static_assert naming it.
template <bool Report, class T>
constexpr bool tensor_value_type_accepted() {
  if constexpr (!value_type_is_arithmetic<std::remove_const_t<T>>) {
    if constexpr (Report)
      static_assert(value_type_is_arithmetic<std::remove_const_t<T>>,
                    "value_type_is_arithmetic: argus::tensor<T, S> holds arithmetic values such as "
                    "float, double, uint8_t");
    return false;
  } else if constexpr (!value_type_is_not_const<T>) {
    if constexpr (Report)
      static_assert(value_type_is_not_const<T>,
                    "value_type_is_not_const: argus::tensor<T, S> owns its elements, so T is not "
                    "const; read-only elements are a const tensor or a tensor_view<const T, S>");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

template <class T, Shape S>
class tensor {
  // T's rules are reported here, once; with a T that breaks one, the elements are stored as
  // float, so that nothing else reports an error.
  using storage_type = std::conditional_t<detail::tensor_value_type_accepted<true, T>(), T, float>;

 public:
  using value_type = T;
  using shape_type = S;

  /// Static extents from the type, run-time extents 0 (an empty tensor, as std::extents and
  /// Eigen's dynamic matrices default to); elements are zero.
  tensor() : tensor(S{}) {}
  /// From the run-time extents, in axis order; elements are zero.
  ///
  /// Checks, in order, reporting the first that fails (a static_assert firewall: any arguments
  /// are taken; copies and tensor(s), not templates, win their ties): the extents are integers
  /// (run_time_extents_are_integers); one per dyn axis (run_time_extents_match_dyn_axes).
  template <class... I>
  explicit tensor(I... dynamic) : tensor(shape_from_run_time_extents(dynamic...)) {}
  /// From a shape object; elements are zero.
  explicit tensor(const S& s) : shape_(s), buffer_(s.size()), state_(state_for(buffer_)) {}

  tensor(const tensor& o) : shape_(o.shape_), buffer_(o.buffer_), state_(state_for(buffer_)) {}
  /// From a tensor of the same shape, the elements are copied into this tensor's storage, and
  /// expressions built on it read the new values. From one of another shape, this tensor takes
  /// new storage, and expressions built on it throw shape_error when evaluated.
  tensor& operator=(const tensor& o) {
    if (this == &o) return *this;
    if (shape_ == o.shape_ && buffer_.size() == o.buffer_.size()) {
      buffer_ = o.buffer_;  // in place
      return *this;
    }
    tensor copy(o);
    return *this = std::move(copy);
  }
  /// A moved-from tensor is empty: its run-time extents are 0, and it has no storage. When
  /// every extent is static it keeps them, and evaluating an expression that reads it throws
  /// shape_error ("moved-from tensor"). Expressions built on o before the move read this
  /// tensor's elements (the same storage).
  tensor(tensor&& o) noexcept
      : shape_(std::exchange(o.shape_, S{})),
        buffer_(std::move(o.buffer_)),
        state_(std::move(o.state_)) {}
  /// This tensor takes o's storage; its own goes, and expressions built on this tensor before
  /// throw shape_error when evaluated (build them again). Those built on o read this tensor.
  tensor& operator=(tensor&& o) noexcept {
    if (this != &o) {
      release();
      shape_ = std::exchange(o.shape_, S{});
      buffer_ = std::move(o.buffer_);
      state_ = std::move(o.state_);
    }
    return *this;
  }
  ~tensor() { release(); }

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

  tensor_view<T, S> view() & noexcept { return {data(), shape_}; }
  tensor_view<const T, S> view() const& noexcept { return {data(), shape_}; }
  /// Of a temporary: reported (view_of_a_named_tensor). A temporary still converts to a view
  /// where a function takes one, for the length of that call.
  tensor_view<T, S> view() && noexcept {
    static_assert(view_of_a_named_tensor<tensor&&>,
                  "view_of_a_named_tensor: x.view() of a temporary argus::tensor would point at "
                  "freed memory once the statement ends; name the tensor first");
    return {data(), shape_};
  }
  operator tensor_view<T, S>() noexcept { return view(); }
  operator tensor_view<const T, S>() const noexcept { return view(); }

  /// The element at (i, j, ...): one index per axis (one_index_per_axis). Under
  /// ARGUS_CHECKED_ACCESS (config.hpp) each index is checked against its extent, and a
  /// moved-from tensor throws.
  template <class... I>
  T& operator()(I... idx) noexcept(!detail::checked_access) {
    return data()[offset(idx...)];
  }
  template <class... I>
  const T& operator()(I... idx) const noexcept(!detail::checked_access) {
    return data()[offset(idx...)];
  }

  /// Sets every element to v.
  void fill(T v) noexcept { std::fill(begin(), end(), v); }

 private:
  friend struct detail::tensor_access;
  tensor(const S& s, aligned_buffer<storage_type>&& b)
      : shape_(s), buffer_(std::move(b)), state_(state_for(buffer_)) {}

  /// A fresh state for storage b, or none when b holds nothing.
  static std::shared_ptr<detail::storage_state> state_for(const aligned_buffer<storage_type>& b) {
    return b.size() == 0 ? nullptr : std::make_shared<detail::storage_state>();
  }
  /// Marks this tensor's storage as gone, for the leaves that watch it.
  void release() noexcept {
    if (state_) state_->released = true;
    state_.reset();
  }

  /// The row-major offset of the element at (i, j, ...), whose rule it reports.
  template <class... I>
  std::size_t offset(I... idx) const noexcept(!detail::checked_access) {
    if constexpr (!one_index_per_axis<sizeof...(I), S::rank()>) {
      static_assert(one_index_per_axis<sizeof...(I), S::rank()>,
                    "one_index_per_axis: argus::tensor<T, S>(i, j, ...) takes one index per axis "
                    "of S");
      return 0;
    } else if constexpr (!indices_are_integers<I...>) {
      static_assert(indices_are_integers<I...>,
                    "indices_are_integers: argus::tensor<T, S>(i, j, ...) takes integer indices");
      return 0;
    } else {
      if constexpr (detail::checked_access)
        detail::check_access("argus::tensor(i, j, ...)", shape_, data(), idx...);
      // Row-major, in Horner's form, ((i0 · e1 + i1) · e2 + i2) ..., rather than through
      // layout<S>::row_major's strides, which it would rebuild on every access: a loop of
      // unchecked accesses over a (2, 8, 512, 64) tensor 1.6x faster (-O2, Zen 3).
      const std::array<std::size_t, S::rank()> c{static_cast<std::size_t>(idx)...};
      std::size_t off = 0;
      for (std::size_t a = 0; a < S::rank(); ++a) off = off * shape_.extent(a) + c[a];
      return off;
    }
  }

  /// The shape of tensor(extents...), whose rules it reports.
  template <class... I>
  static S shape_from_run_time_extents(I... dynamic) {
    if constexpr (!detail::tensor_value_type_accepted<false, T>()) {
      return S{};  // reported by the class
    } else if constexpr (!run_time_extents_are_integers<I...>) {
      static_assert(run_time_extents_are_integers<I...>,
                    "run_time_extents_are_integers: argus::tensor<T, S>(extents...) takes the "
                    "run-time extents as integers, in axis order (or one S)");
      return S{};
    } else if constexpr (!run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>) {
      static_assert(run_time_extents_match_dyn_axes<sizeof...(I), S::rank_dynamic()>,
                    "run_time_extents_match_dyn_axes: argus::tensor<T, S>(extents...) takes one "
                    "run-time extent per dyn axis of S (batch<>, seq<>), in axis order");
      return S{};
    } else {
      return S(dynamic...);
    }
  }

  S shape_;
  aligned_buffer<storage_type> buffer_;
  std::shared_ptr<detail::storage_state> state_;
};

namespace detail {
/// For evaluators: a tensor that takes over a row-major buffer of exactly s.size() elements.
struct tensor_access {
  template <class T, Shape S>
  static tensor<T, S> adopt(const S& s, aligned_buffer<T>&& b) {
    return tensor<T, S>(s, std::move(b));
  }
  /// The state of t's storage, for a leaf over it.
  template <class T, Shape S>
  static storage_watch watch(const tensor<T, S>& t) noexcept {
    return t.state_;
  }
};
}  // namespace detail

}  // namespace argus
