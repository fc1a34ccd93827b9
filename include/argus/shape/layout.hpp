// argus/shape/layout.hpp -- shape layer: a layout maps a coordinate to an offset.
//
// A layout is (shape, stride): offset(c) = sum_i c_i * stride_i. Row-major (the last index
// varies fastest) is the default; other strides describe views such as split heads.
#pragma once

#include <argus/config.hpp>
#include <argus/diagnostics/check.hpp>
#include <argus/shape/shape.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace argus {

/// x(i, j, ...) of a tensor, view or layout: one index per axis, as many as the shape's rank.
template <std::size_t Given, std::size_t Rank>
concept one_index_per_axis = Given == Rank;
/// x(i, j, ...): the indices are integers, or what converts to std::size_t as they do (an enum,
/// an index type of the user's), but never floating-point (1.5 was converted silently, its
/// fraction dropped).
template <class... I>
concept indices_are_integers = ((std::is_convertible_v<I, std::size_t> &&
                                 !std::is_floating_point_v<I>)&&...);

namespace detail {
/// Whether element access checks its indices and storage (ARGUS_CHECKED_ACCESS, config.hpp).
inline constexpr bool checked_access = ARGUS_CHECKED_ACCESS != 0;

/// Whether index i is below zero: a signed integer's or an enum's value (an unsigned one never).
template <class I>
constexpr bool is_negative(I i) noexcept {
  if constexpr (std::is_enum_v<I>)
    return is_negative(static_cast<std::underlying_type_t<I>>(i));
  else if constexpr (std::is_signed_v<I>)
    return i < 0;
  else
    return false;
}
/// check_access's throw, out of line: the message is built once per program, not in every
/// instantiation of check_access (one per shape and index types: the element access of every
/// tensor and view a program reads).
[[noreturn]] inline void throw_index_out_of_range(const char* op, std::size_t axis,
                                                  const char* axis_name, bool negative,
                                                  std::size_t index, std::size_t extent) {
  throw std::out_of_range(
      std::string(op) + ": the index on axis " + std::to_string(axis) + " (" + axis_name + ") is " +
      (negative ? std::to_string(static_cast<long long>(index)) : std::to_string(index)) +
      ", but the axis's extent is " + std::to_string(extent) + "; an index lies in [0, extent)");
}

/// For element access under ARGUS_CHECKED_ACCESS: throws shape_error when elements of shape s
/// have no storage (data null), and std::out_of_range when an index is not below its axis's
/// extent, naming the axis, the extent and the index (a negative one as such). `op` names the
/// access, e.g. "argus::tensor(i, j, ...)".
template <Shape S, class... I>
void check_access(const char* op, const S& s, const void* data, I... idx) {
  check_has_storage(op, data, s.size());
  const std::array<std::size_t, S::rank()> c{static_cast<std::size_t>(idx)...};
  const std::array<bool, S::rank()> negative{is_negative(idx)...};
  for (std::size_t i = 0; i < S::rank(); ++i)
    if (negative[i] || c[i] >= s.extent(i))
      throw_index_out_of_range(op, i, axis_kind_names<S>[i], negative[i], c[i], s.extent(i));
}
}  // namespace detail

template <Shape S>
struct layout {
  using shape_type = S;
  static constexpr std::size_t rank() noexcept { return S::rank(); }

  S shape;
  std::array<std::size_t, S::rank()> stride;

  /// The row-major (C order) layout of s.
  static constexpr layout row_major(const S& s) noexcept {
    layout l{s, {}};
    std::size_t st = 1;
    for (std::size_t i = S::rank(); i-- > 0;) {
      l.stride[i] = st;
      st *= s.extent(i);
    }
    return l;
  }

  constexpr std::size_t extent(std::size_t i) const noexcept { return shape.extent(i); }

  /// The offset of (i, j, ...): one integer index per axis (one_index_per_axis,
  /// indices_are_integers, reported here). post: offset(c) == sum_i c[i] * stride[i]
  template <class... I>
  constexpr std::size_t operator()(I... idx) const noexcept {
    if constexpr (!one_index_per_axis<sizeof...(I), S::rank()>) {
      static_assert(one_index_per_axis<sizeof...(I), S::rank()>,
                    "one_index_per_axis: argus::layout<S>(i, j, ...) takes one index per axis of "
                    "S");
      return 0;
    } else if constexpr (!indices_are_integers<I...>) {
      static_assert(indices_are_integers<I...>,
                    "indices_are_integers: argus::layout<S>(i, j, ...) takes integer indices");
      return 0;
    } else {
      const std::array<std::size_t, S::rank()> c{static_cast<std::size_t>(idx)...};
      std::size_t off = 0;
      for (std::size_t i = 0; i < S::rank(); ++i) off += c[i] * stride[i];
      return off;
    }
  }

  /// True when the elements occupy [0, size) in row-major order: every stride is the
  /// row-major one, but those of extents of 1, which no coordinate steps along (heads split
  /// from one position, a batch of one).
  constexpr bool is_row_major() const noexcept {
    const layout r = row_major(shape);
    for (std::size_t i = 0; i < S::rank(); ++i)
      if (shape.extent(i) != 1 && stride[i] != r.stride[i]) return false;
    return true;
  }

  friend constexpr bool operator==(const layout&, const layout&) = default;
};

}  // namespace argus
