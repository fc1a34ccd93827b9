// argus/expr/split_heads.hpp -- expression layer: (B,S,model<H*DK>) -> (B,head<H>,S,head_dim<DK>).
//
// A reshape of the projected matrix, not a split of the input: head i owns columns
// [i*DK, (i+1)*DK). The fused evaluator reads it as a strided view (shape/split.hpp); the
// unfused one materialises the copy.
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>
#include <argus/shape/split.hpp>

#include <cstddef>

namespace argus {

template <std::size_t Heads, Expression X>
struct split_heads_node {
  static constexpr bool is_expression = true;
  static constexpr std::size_t heads = Heads;
  using value_type = typename X::value_type;
  using shape_type = split_heads_shape<Heads, typename X::shape_type>;
  X x;
  shape_type shape() const {
    const auto s = x.shape();
    return shape_type::from_extents({s.extent(0), Heads, s.extent(1), s.extent(2) / Heads});
  }
};

/// Views x (batch, seq, model<Heads*DK>) as Heads heads (batch, head<Heads>, seq, head_dim<DK>).
template <std::size_t Heads, Operand X>
  requires axes_are_batch_seq_model<shape_of<X>> &&
           heads_divide_width<axis_t<shape_of<X>, 2>::static_extent, Heads>
constexpr split_heads_node<Heads, expression_t<X>> split_heads(X&& x) {
  return {as_expression(std::forward<X>(x))};
}

}  // namespace argus
