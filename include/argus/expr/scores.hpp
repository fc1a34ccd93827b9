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
  using shape_type =
      argus::shape<axis_t<typename Q::shape_type, 0>, axis_t<typename Q::shape_type, 1>,
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

namespace detail {
/// 1/sqrt(d_k) for queries Q, or 1 while Q is not yet known to be valid.
template <class Q>
auto default_scale() {
  // Nested: in `Operand<Q> && ...<shape_of<Q>>` shape_of<Q> is formed even for a Q that is
  // not an operand (a rejected earlier expression), and fails there: a second error.
  if constexpr (Operand<Q>) {
    if constexpr (axes_are_batch_head_seq_head_dim<shape_of<Q>>) {
      using T = value_type_of<Q>;
      return T(1) / std::sqrt(T(axis_of<Q, 3>::static_extent));
    } else {
      return 1.0f;
    }
  } else {
    return 1.0f;
  }
}
}  // namespace detail

/// Q·Kᵀ·scale for every head; scale defaults to 1/sqrt(d_k).
namespace detail {
/// The rules of scores(q, k[, scale]), in the order they are reported; true when all hold. With
/// Report, the first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class Q, class K, class Scale>
constexpr bool scores_accepted() {
  if constexpr (!operands_accepted<Report, Q, K>()) {
    return false;
  } else if constexpr (!axes_are_batch_head_seq_head_dim<shape_of<Q>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_head_dim<shape_of<Q>>,
                    "axes_are_batch_head_seq_head_dim: argus::scores(q, k) takes queries of axes "
                    "(batch, head, seq, head_dim)");
    return false;
  } else if constexpr (!axes_are_batch_head_seq_head_dim<shape_of<K>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_head_dim<shape_of<K>>,
                    "axes_are_batch_head_seq_head_dim: argus::scores(q, k) takes keys of axes "
                    "(batch, head, seq, head_dim)");
    return false;
  } else if constexpr (!value_types_agree<value_type_of<Q>, value_type_of<K>>) {
    if constexpr (Report)
      static_assert(value_types_agree<value_type_of<Q>, value_type_of<K>>,
                    "value_types_agree: argus::scores(q, k) takes q and k of one value type");
    return false;
  } else if constexpr (!q_and_k_head_widths_agree<axis_of<Q, 3>::static_extent,
                                                  axis_of<K, 3>::static_extent>) {
    if constexpr (Report)
      static_assert(
          q_and_k_head_widths_agree<axis_of<Q, 3>::static_extent, axis_of<K, 3>::static_extent>,
          "q_and_k_head_widths_agree: argus::scores(q, k) needs q and k of one head width d_k");
    return false;
  } else if constexpr (!kv_heads_divide_query_heads<axis_of<Q, 1>::static_extent,
                                                    axis_of<K, 1>::static_extent>) {
    if constexpr (Report)
      static_assert(
          kv_heads_divide_query_heads<axis_of<Q, 1>::static_extent, axis_of<K, 1>::static_extent>,
          "kv_heads_divide_query_heads: argus::scores(q, k) needs k's heads to divide q's heads");
    return false;
  } else if constexpr (!batches_agree<axis_of<Q, 0>::static_extent, axis_of<K, 0>::static_extent>) {
    if constexpr (Report)
      static_assert(batches_agree<axis_of<Q, 0>::static_extent, axis_of<K, 0>::static_extent>,
                    "batches_agree: argus::scores(q, k) needs q and k of one batch");
    return false;
  } else if constexpr (!scale_is_a_number<Scale>) {
    if constexpr (Report)
      static_assert(scale_is_a_number<Scale>,
                    "scale_is_a_number: argus::scores(q, k, scale) takes a float or double scale");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when scores(q, k[, scale]) compiles (the same rules, without the report): for in-process
/// tests.
template <class Q, class K, class Scale = float>
concept scores_accepts = detail::scores_accepted<false, Q, K, Scale>();

template <class Q, class K, class Scale = decltype(detail::default_scale<Q>())>
constexpr auto scores(Q&& q, K&& k, Scale scale = detail::default_scale<Q>()) {
  if constexpr (!detail::scores_accepted<true, Q, K, Scale>()) {
    return detail::rejected{};
  } else {
    scores_node<expression_t<Q>, expression_t<K>> s{as_expression(std::forward<Q>(q)),
                                                    as_expression(std::forward<K>(k)),
                                                    static_cast<value_type_of<Q>>(scale)};
    detail::check_extents_agree("argus::scores", "the batch of Q", s.q.shape().extent(0),
                                "the batch of K", s.k.shape().extent(0));
    return s;
  }
}

}  // namespace argus
