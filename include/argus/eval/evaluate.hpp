// argus/eval/evaluate.hpp -- evaluation layer: the entry points.
//
//     argus::tensor<float, S> y = argus::evaluate(expr, argus::fused);   // or argus::unfused
//     argus::evaluate(expr, argus::unfused, y);                           // into an existing
//     tensor
//
// Both policies compute the same value within floating-point tolerance; the fused one
// runs the attention sub-tree as one loop nest (eval/fused_attention.hpp).
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/eval/fused_attention.hpp>
#include <argus/eval/materialized.hpp>
#include <argus/eval/select.hpp>
#include <argus/eval/unfused.hpp>
#include <argus/expr/node.hpp>
#include <argus/tensor/tensor.hpp>

#include <algorithm>
#include <string>
#include <type_traits>

namespace argus {

namespace detail {

/// Evaluates nodes under Policy: a matching fused pattern, else the unfused step. `root` is
/// where the root's step may write its result (allocate_result): evaluate(e, p, out) sets it.
template <class Policy>
struct evaluator {
  root_destination root{};

  template <Expression E>
  auto operator()(const E& e) const {
    using P = selected_pattern<Policy, E>;
    if constexpr (std::is_void_v<P>)
      return unfused_step(e, *this);
    else
      return P::evaluate(e, *this);
  }
};

/// from's elements into to, in row-major order: straight, or through a row-major copy where
/// from reads bytes of to (a view of the output's own storage).
template <class T, Shape S>
void copy_into(const tensor_view<const T, S>& from, tensor<T, S>& to) {
  if (!shares_bytes(to.data(), from.size() * sizeof(T), from))
    return write_row_major(from, to.data());
  auto m = contiguous(borrow<T>(from));
  std::copy_n(m.view.data(), m.view.size(), to.data());
}

}  // namespace detail

/// evaluate's relations (beside the entry point: they name expression and tensor types, which
/// diagnostics/relations.hpp, below the expression layer, cannot; argument_is_an_expression,
/// which evaluate_reference and attention_weights share, is in expr/node.hpp).
template <class P>
concept argument_is_an_evaluation_policy = EvaluationPolicy<P>;
/// evaluate(e, policy, out): out is a tensor<T, S> of e's value type T and shape type S.
template <class Out, class T, class S>
concept output_is_a_tensor_of_the_expression_shape = std::is_same_v<Out, tensor<T, S>>;
/// evaluate(e, policy, out): out is a named tensor, which keeps the result; OutRef is how the
/// call received it.
template <class OutRef>
concept output_is_not_a_temporary = std::is_lvalue_reference_v<OutRef>;

namespace detail {
/// The entry points that take (expression, policy): their rules are the same, their messages
/// name them.
enum class policy_entry { evaluate, explain };

/// Reports (static_assert) the first rule evaluate(e, p) or explain(e, p) breaks; true when it
/// breaks none.
template <policy_entry Entry, class E, class P>
constexpr bool evaluation_accepted() {
  constexpr bool evaluating = Entry == policy_entry::evaluate;
  if constexpr (any_rejected<E>) {
    return false;  // reported where it was made
  } else if constexpr (!argument_is_an_expression<E>) {
    if constexpr (evaluating)
      static_assert(argument_is_an_expression<E>,
                    "argument_is_an_expression: argus::evaluate(e, policy) evaluates an expression "
                    "(built by project, scores, forward, ...), not a tensor");
    else
      static_assert(argument_is_an_expression<E>,
                    "argument_is_an_expression: argus::explain(e, policy) shows the plan of an "
                    "expression (built by project, scores, forward, ...), not of a tensor");
    return false;
  } else if constexpr (!argument_is_an_evaluation_policy<P>) {
    if constexpr (evaluating)
      static_assert(argument_is_an_evaluation_policy<P>,
                    "argument_is_an_evaluation_policy: argus::evaluate(e, policy) takes "
                    "argus::fused or argus::unfused as the policy");
    else
      static_assert(argument_is_an_evaluation_policy<P>,
                    "argument_is_an_evaluation_policy: argus::explain(e, policy) takes "
                    "argus::fused or argus::unfused as the policy");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

namespace detail {
/// What evaluate(e) without a policy names in its report (a type that is no policy, dependent
/// on E so that the report waits for a call).
template <class E>
struct missing_policy {};
}  // namespace detail

/// evaluate(e) without a policy: reported (argument_is_an_evaluation_policy), once.
template <class E>
detail::rejected evaluate(const E&) {
  static_assert(
      detail::any_rejected<E> || argument_is_an_evaluation_policy<detail::missing_policy<E>>,
      "argument_is_an_evaluation_policy: argus::evaluate(e, policy) takes a policy "
      "after e: argus::fused or argus::unfused");
  return {};
}

/// evaluate(e, policy, out) into a temporary (`evaluate(e, p, tensor<T, S>(...))`): the result
/// would be gone at the end of the statement. Reported (output_is_not_a_temporary), once.
template <class E, class P, class Out>
  requires(!std::is_lvalue_reference_v<Out>)
void evaluate(const E&, P, Out&&) {
  static_assert(detail::any_rejected<E, Out> || output_is_not_a_temporary<Out&&>,
                "output_is_not_a_temporary: argus::evaluate(e, policy, out) writes the result into "
                "out, a named tensor (a temporary is gone at the end of the statement, and the "
                "result with it)");
}

/// The value of expression e, computed under policy p, as a new tensor.
template <class E, class P>
auto evaluate(const E& e, P) {
  if constexpr (!detail::evaluation_accepted<detail::policy_entry::evaluate, E, P>()) {
    return detail::rejected{};
  } else {
    using T = typename E::value_type;
    auto m = detail::evaluator<P>{}(e);
    // A row-major result that owns its storage becomes the tensor without a copy.
    if (m.storage.size() == m.view.size() && m.view.data() == m.storage.data() &&
        m.view.layout().is_row_major())
      return detail::tensor_access::adopt(m.view.shape(), std::move(m.storage));
    tensor<T, typename E::shape_type> out(m.view.shape());
    detail::copy_into(m.view, out);
    return out;
  }
}

/// Evaluates e under policy p into out, a tensor of e's value type and shape type whose
/// extents must be e's; otherwise shape_error is thrown and out is untouched.
template <class E, class P, class Out>
void evaluate(const E& e, P p, Out& out) {
  // Out rejected: its error is already reported. (One condition: evaluation_accepted, which
  // reports e's first broken rule, is instantiated only when out is no rejected value.)
  constexpr bool accepted = [] {
    if constexpr (detail::any_rejected<Out>)
      return false;
    else
      return detail::evaluation_accepted<detail::policy_entry::evaluate, E, P>();
  }();
  if constexpr (!accepted) {
    return;
  } else if constexpr (!output_is_a_tensor_of_the_expression_shape<Out, typename E::value_type,
                                                                   typename E::shape_type>) {
    static_assert(
        output_is_a_tensor_of_the_expression_shape<Out, typename E::value_type,
                                                   typename E::shape_type>,
        "output_is_a_tensor_of_the_expression_shape: argus::evaluate(e, policy, out) writes into "
        "an argus::tensor<T, S> of e's value type T and shape type S");
    return;
  } else {
    const auto s = e.shape();
    detail::check_shapes_agree("argus::evaluate", "the output tensor", out.shape(),
                               "the expression", s,
                               "make the output with the expression's extents: "
                               "argus::tensor<T, S> out(e.shape())");
    detail::check_has_storage("argus::evaluate (the output tensor)", out.data(), s.size());
    // The root's step writes into out where it can (detail::allocate_result); otherwise its
    // result is copied.
    detail::evaluator<P> ev;
    ev.root = {&e, &detail::type_tag<E>, out.data()};
    auto m = ev(e);
    if (m.view.data() != out.data() || !m.view.layout().is_row_major())
      detail::copy_into(m.view, out);
    (void)p;
  }
}

}  // namespace argus
