// argus/expr/attend.hpp -- expression layer: the weighted sum of values, P·V per head.
//
// p (B,head<H>,Sq,Skv) and v (B,head<G>,Skv,head_dim<DV>) give (B,head<H>,Sq,head_dim<DV>);
// query head i reads value head i / (H/G).
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

namespace argus {

template <Expression P, Expression V>
struct attend_node {
  static constexpr bool is_expression = true;
  using value_type = typename P::value_type;
  using shape_type = argus::shape<axis_t<typename P::shape_type, 0>, axis_t<typename P::shape_type, 1>,
                           axis_t<typename P::shape_type, 2>, axis_t<typename V::shape_type, 3>>;
  P weights;
  V v;
  shape_type shape() const {
    const auto ps = weights.shape();
    return shape_type::from_extents(
        {ps.extent(0), ps.extent(1), ps.extent(2), static_extent_v<shape_type, 3>});
  }
};

/// The weighted sum of the values v by the attention weights p, for every head.
template <Operand P, Operand V>
  requires axes_are_batch_head_seq_seq<shape_of<P>> &&
           axes_are_batch_head_seq_head_dim<shape_of<V>> &&
           value_types_agree<value_type_of<P>, value_type_of<V>> &&
           kv_heads_divide_query_heads<axis_t<shape_of<P>, 1>::static_extent, axis_t<shape_of<V>, 1>::static_extent> &&
           k_and_v_lengths_agree<axis_t<shape_of<P>, 3>::static_extent, axis_t<shape_of<V>, 2>::static_extent> &&
           batches_agree<axis_t<shape_of<P>, 0>::static_extent, axis_t<shape_of<V>, 0>::static_extent>
constexpr auto attend(P&& p, V&& v) {
  attend_node<expression_t<P>, expression_t<V>> node{as_expression(std::forward<P>(p)),
                                                     as_expression(std::forward<V>(v))};
  const auto ps = node.weights.shape();
  const auto vs = node.v.shape();
  detail::check_extents_agree("argus::attend", "the number of keys (seq_kv of the weights)",
                              ps.extent(3), "the number of values (seq of V)", vs.extent(2));
  detail::check_extents_agree("argus::attend", "the batch of the weights", ps.extent(0),
                              "the batch of V", vs.extent(0));
  return node;
}

}  // namespace argus
