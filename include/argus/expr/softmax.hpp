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

namespace detail {
/// The rules of softmax(s), in the order they are reported; true when all hold. With Report, the
/// first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class E>
constexpr bool softmax_accepted() {
  if constexpr (!operands_accepted<Report, E>()) {
    return false;
  } else if constexpr (!axes_are_batch_head_seq_seq<shape_of<E>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_seq<shape_of<E>>,
                    "axes_are_batch_head_seq_seq: argus::softmax(s) takes scores of axes (batch, "
                    "head, seq_q, seq_kv)");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when softmax(s) compiles (the same rules, without the report): for in-process tests.
template <class E>
concept softmax_accepts = detail::softmax_accepted<false, E>();

/// Attention weights: softmax of scores s (batch, head, seq_q, seq_kv) over seq_kv.
template <class E>
constexpr auto softmax(E&& s) {
  if constexpr (!detail::softmax_accepted<true, E>()) {
    return detail::rejected{};
  } else {
    return softmax_node<expression_t<E>>{as_expression(std::forward<E>(s))};
  }
}

}  // namespace argus
