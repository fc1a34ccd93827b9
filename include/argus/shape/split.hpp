// argus/shape/split.hpp -- shape layer: split-heads and merge-heads as layout algebra.
//
// Splitting the model mode of (B,S,D):(sB,sS,sD) by DK = D/H gives
//     (B,H,S,DK):(sB, DK*sD, sS, sD)
// which addresses the same memory: split-heads is a view, not a copy. Merging reads the
// same layout back, and is a view exactly when stride(head) == DK*stride(head_dim).
// The derivation is in docs/explanation/layouts.md.
#pragma once

#include <argus/shape/layout.hpp>

#include <cstddef>
#include <optional>

namespace argus {

/// The shape of x split into Heads heads: (B,S,model<H*DK>) -> (B,head<H>,S,head_dim<DK>).
template <std::size_t Heads, Shape S>
using split_heads_shape =
    shape<axis_t<S, 0>, head<Heads>, axis_t<S, 1>, head_dim<static_extent_v<S, 2> / Heads>>;

/// The shape of merged heads: (B,head<H>,S,head_dim<DK>) -> (B,S,model<H*DK>).
template <Shape S>
using merge_heads_shape =
    shape<axis_t<S, 0>, axis_t<S, 2>, model<static_extent_v<S, 1> * static_extent_v<S, 3>>>;

/// The view of a (batch, seq, model) layout as (batch, head, seq, head_dim).
/// pre: Heads divides the model extent.
/// post: split_layout<H>(l)(b, h, s, d) == l(b, s, h * DK + d) for every coordinate.
template <std::size_t Heads, Shape S>
constexpr layout<split_heads_shape<Heads, S>> split_layout(const layout<S>& l) {
  using R = split_heads_shape<Heads, S>;
  constexpr std::size_t dk = static_extent_v<S, 2> / Heads;
  const R r = R::from_extents({l.extent(0), Heads, l.extent(1), dk});
  return {r, {l.stride[0], dk * l.stride[2], l.stride[1], l.stride[2]}};
}

/// The view of a (batch, head, seq, head_dim) layout as (batch, seq, model), when one
/// exists: the heads must sit side by side, stride(head) == DK * stride(head_dim).
/// post: merge_layout(l)->operator()(b, s, h * DK + d) == l(b, h, s, d) for every coordinate.
template <Shape S>
constexpr std::optional<layout<merge_heads_shape<S>>> merge_layout(const layout<S>& l) {
  using R = merge_heads_shape<S>;
  constexpr std::size_t dk = static_extent_v<S, 3>;
  if (l.stride[1] != dk * l.stride[3]) return std::nullopt;
  const R r = R::from_extents({l.extent(0), l.extent(2), l.extent(1) * dk});
  return layout<R>{r, {l.stride[0], l.stride[2], l.stride[3]}};
}

}  // namespace argus
