// argus/eval/evaluate.hpp -- evaluation layer: the entry points.
//
//     argus::tensor<float, S> y = argus::evaluate(expr, argus::fused);   // or argus::unfused
//     argus::evaluate(expr, argus::unfused, y);                           // into an existing tensor
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

/// Evaluates nodes under Policy: a matching fused pattern, else the unfused step.
template <class Policy>
struct evaluator {
  template <Expression E>
  auto operator()(const E& e) const {
    using P = selected_pattern<Policy, E>;
    if constexpr (std::is_void_v<P>) return unfused_step(e, *this);
    else return P::evaluate(e, *this);
  }
};

template <class T, Shape S>
void copy_into(const tensor_view<const T, S>& from, tensor<T, S>& to) {
  auto m = contiguous(borrow<T>(from));
  std::copy_n(m.view.data(), m.view.size(), to.data());
}

}  // namespace detail

/// The value of expression e, computed under policy p, as a new tensor.
template <Expression E, EvaluationPolicy P>
tensor<typename E::value_type, typename E::shape_type> evaluate(const E& e, P) {
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

/// Evaluates e under policy p into out, whose extents must be e's; otherwise shape_error
/// is thrown and out is untouched.
template <Expression E, EvaluationPolicy P>
void evaluate(const E& e, P p, tensor<typename E::value_type, typename E::shape_type>& out) {
  const auto s = e.shape();
  for (std::size_t i = 0; i < s.rank(); ++i)
    detail::check_extents_agree("argus::evaluate", "the output tensor's extent", out.extent(i),
                                "the expression's extent", s.extent(i));
  detail::check_has_storage("argus::evaluate (the output tensor)", out.data(), s.size());
  auto m = detail::evaluator<P>{}(e);
  detail::copy_into(m.view, out);
  (void)p;
}

}  // namespace argus
