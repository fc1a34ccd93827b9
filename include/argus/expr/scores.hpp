// argus/expr/scores.hpp -- expression layer: S = Q·Kᵀ·scale per head.
//
// q (B,head<H>,Sq,head_dim<DK>) and k (B,head<G>,Skv,head_dim<DK>) give (B,head<H>,Sq,Skv).
// G key heads serve H query heads (G divides H): query head i uses key head i / (H/G),
// contiguous groups as in grouped-/multi-query attention. The default scale is 1/sqrt(DK).
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

#include <cmath>
#include <cstddef>

namespace argus {

template <Expression Q, Expression K>
struct scores_node {
  static constexpr bool is_expression = true;
  using value_type = typename Q::value_type;
  using shape_type = argus::shape<axis_t<typename Q::shape_type, 0>, axis_t<typename Q::shape_type, 1>,
                           axis_t<typename Q::shape_type, 2>, axis_t<typename K::shape_type, 2>>;
  static constexpr std::size_t d_k = static_extent_v<typename Q::shape_type, 3>;
  Q q;
  K k;
  value_type scale;
  shape_type shape() const {
    const auto qs = q.shape();
    const auto ks = k.shape();
    return shape_type::from_extents({qs.extent(0), qs.extent(1), qs.extent(2), ks.extent(2)});
  }
};

/// Q·Kᵀ·scale for every head; scale defaults to 1/sqrt(d_k).
template <Operand Q, Operand K>
  requires axes_are_batch_head_seq_head_dim<shape_of<Q>> &&
           axes_are_batch_head_seq_head_dim<shape_of<K>> &&
           value_types_agree<value_type_of<Q>, value_type_of<K>> &&
           q_and_k_head_widths_agree<axis_t<shape_of<Q>, 3>::static_extent, axis_t<shape_of<K>, 3>::static_extent> &&
           kv_heads_divide_query_heads<axis_t<shape_of<Q>, 1>::static_extent, axis_t<shape_of<K>, 1>::static_extent> &&
           batches_agree<axis_t<shape_of<Q>, 0>::static_extent, axis_t<shape_of<K>, 0>::static_extent>
constexpr auto scores(Q&& q, K&& k,
                      value_type_of<Q> scale = value_type_of<Q>(1) /
                                               std::sqrt(value_type_of<Q>(axis_t<shape_of<Q>, 3>::static_extent))) {
  scores_node<expression_t<Q>, expression_t<K>> s{as_expression(std::forward<Q>(q)),
                                                  as_expression(std::forward<K>(k)), scale};
  detail::check_extents_agree("argus::scores", "the batch of Q", s.q.shape().extent(0),
                              "the batch of K", s.k.shape().extent(0));
  return s;
}

}  // namespace argus
