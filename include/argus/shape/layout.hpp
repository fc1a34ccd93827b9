// argus/shape/layout.hpp -- shape layer: a layout maps a coordinate to an offset.
//
// A layout is (shape, stride): offset(c) = sum_i c_i * stride_i. Row-major (the last index
// varies fastest) is the default; other strides describe views such as split heads.
#pragma once

#include <argus/shape/shape.hpp>

#include <array>
#include <cstddef>

namespace argus {

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

  /// post: offset(c) == sum_i c[i] * stride[i]
  template <class... I>
  constexpr std::size_t operator()(I... idx) const noexcept requires(sizeof...(I) == S::rank()) {
    const std::array<std::size_t, S::rank()> c{static_cast<std::size_t>(idx)...};
    std::size_t off = 0;
    for (std::size_t i = 0; i < S::rank(); ++i) off += c[i] * stride[i];
    return off;
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
