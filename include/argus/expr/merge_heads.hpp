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

/// Concatenates the heads of x (batch, head<H>, seq, head_dim<DV>) into (batch, seq, model<H*DV>).
template <Operand X>
  requires axes_are_batch_head_seq_head_dim<shape_of<X>>
constexpr merge_heads_node<expression_t<X>> merge_heads(X&& x) {
  return {as_expression(std::forward<X>(x))};
}

}  // namespace argus
