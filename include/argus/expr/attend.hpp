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
  using shape_type =
      argus::shape<axis_t<typename P::shape_type, 0>, axis_t<typename P::shape_type, 1>,
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
namespace detail {
/// The rules of attend(p, v), in the order they are reported; true when all hold. With Report, the
/// first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class P, class V>
constexpr bool attend_accepted() {
  if constexpr (!operands_accepted<Report, P, V>()) {
    return false;
  } else if constexpr (!axes_are_batch_head_seq_seq<shape_of<P>>) {
    if constexpr (Report)
      static_assert(
          axes_are_batch_head_seq_seq<shape_of<P>>,
          "axes_are_batch_head_seq_seq: argus::attend(p, v) takes weights of axes (batch, "
          "head, seq_q, seq_kv)");
    return false;
  } else if constexpr (!axes_are_batch_head_seq_head_dim<shape_of<V>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_head_dim<shape_of<V>>,
                    "axes_are_batch_head_seq_head_dim: argus::attend(p, v) takes values of axes "
                    "(batch, head, seq, head_dim)");
    return false;
  } else if constexpr (!value_types_agree<value_type_of<P>, value_type_of<V>>) {
    if constexpr (Report)
      static_assert(value_types_agree<value_type_of<P>, value_type_of<V>>,
                    "value_types_agree: argus::attend(p, v) takes p and v of one value type");
    return false;
  } else if constexpr (!kv_heads_divide_query_heads<axis_of<P, 1>::static_extent,
                                                    axis_of<V, 1>::static_extent>) {
    if constexpr (Report)
      static_assert(
          kv_heads_divide_query_heads<axis_of<P, 1>::static_extent, axis_of<V, 1>::static_extent>,
          "kv_heads_divide_query_heads: argus::attend(p, v) needs v's heads to divide p's heads");
    return false;
  } else if constexpr (!k_and_v_lengths_agree<axis_of<P, 3>::static_extent,
                                              axis_of<V, 2>::static_extent>) {
    if constexpr (Report)
      static_assert(
          k_and_v_lengths_agree<axis_of<P, 3>::static_extent, axis_of<V, 2>::static_extent>,
          "k_and_v_lengths_agree: argus::attend(p, v) needs one value per key (p's seq_kv)");
    return false;
  } else if constexpr (!batches_agree<axis_of<P, 0>::static_extent, axis_of<V, 0>::static_extent>) {
    if constexpr (Report)
      static_assert(batches_agree<axis_of<P, 0>::static_extent, axis_of<V, 0>::static_extent>,
                    "batches_agree: argus::attend(p, v) needs p and v of one batch");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when attend(p, v) compiles (the same rules, without the report): for in-process tests.
template <class P, class V>
concept attend_accepts = detail::attend_accepted<false, P, V>();

template <class P, class V>
constexpr auto attend(P&& p, V&& v) {
  if constexpr (!detail::attend_accepted<true, P, V>()) {
    return detail::rejected{};
  } else {
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
}

}  // namespace argus
