// argus/expr/merge_heads.hpp -- expression layer: (B,head<H>,S,head_dim<DV>) -> (B,S,model<H*DV>).
//
// Concatenates the heads along the feature axis, head 0's DV columns first: the inverse of
// split_heads. The fused evaluator writes the heads straight into the merged layout.
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>
#include <argus/shape/split.hpp>

namespace argus {

template <Expression X>
struct merge_heads_node {
  static constexpr bool is_expression = true;
  using value_type = typename X::value_type;
  using shape_type = merge_heads_shape<typename X::shape_type>;
  X x;
  shape_type shape() const {
    const auto s = x.shape();
    return shape_type::from_extents({s.extent(0), s.extent(2), s.extent(1) * s.extent(3)});
  }
};

namespace detail {
/// The rules of merge_heads(x), in the order they are reported; true when all hold. With Report,
/// the first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class X>
constexpr bool merge_heads_accepted() {
  if constexpr (!operands_accepted<Report, X>()) {
    return false;
  } else if constexpr (!axes_are_batch_head_seq_head_dim<shape_of<X>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_head_dim<shape_of<X>>,
                    "axes_are_batch_head_seq_head_dim: argus::merge_heads(x) merges x of axes "
                    "(batch, head, seq, head_dim)");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when merge_heads(x) compiles (the same rules, without the report): for in-process tests.
template <class X>
concept merge_heads_accepts = detail::merge_heads_accepted<false, X>();

/// Concatenates the heads of x (batch, head<H>, seq, head_dim<DV>) into (batch, seq, model<H*DV>).
template <class X>
constexpr auto merge_heads(X&& x) {
  if constexpr (!detail::merge_heads_accepted<true, X>()) {
    return detail::rejected{};
  } else {
    return merge_heads_node<expression_t<X>>{as_expression(std::forward<X>(x))};
  }
}

}  // namespace argus
