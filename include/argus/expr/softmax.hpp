// argus/expr/softmax.hpp -- expression layer: softmax over the keys (the last axis).
//
// Numerically stable (max-subtracted): logits up to ±1e4 stay finite. Ignored keys get
// weight exactly 0; a row whose keys are all ignored is all zeros, never NaN.
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

namespace argus {

template <Expression E>
struct softmax_node {
  static constexpr bool is_expression = true;
  using value_type = typename E::value_type;
  using shape_type = typename E::shape_type;
  E scores;
  shape_type shape() const { return scores.shape(); }
};

/// Attention weights: softmax of scores s (batch, head, seq_q, seq_kv) over seq_kv.
template <Operand E>
  requires axes_are_batch_head_seq_seq<shape_of<E>>
constexpr softmax_node<expression_t<E>> softmax(E&& s) {
  return {as_expression(std::forward<E>(s))};
}

}  // namespace argus
