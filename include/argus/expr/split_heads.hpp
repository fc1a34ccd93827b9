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

namespace detail {
/// The rules of split_heads<Heads>(x), in the order they are reported; true when all hold. With
/// Report, the first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, std::size_t Heads, class X>
constexpr bool split_heads_accepted() {
  if constexpr (!operands_accepted<Report, X>()) {
    return false;
  } else if constexpr (!axes_are_batch_seq_model<shape_of<X>>) {
    if constexpr (Report)
      static_assert(
          axes_are_batch_seq_model<shape_of<X>>,
          "axes_are_batch_seq_model: argus::split_heads<Heads>(x) splits x of axes (batch, "
          "seq, model)");
    return false;
  } else if constexpr (!heads_divide_width<axis_of<X, 2>::static_extent, Heads>) {
    if constexpr (Report)
      static_assert(
          heads_divide_width<axis_of<X, 2>::static_extent, Heads>,
          "heads_divide_width: argus::split_heads<Heads>(x) needs Heads >= 1 dividing the "
          "width of x");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when split_heads<Heads>(x) compiles (the same rules, without the report): for in-process
/// tests.
template <std::size_t Heads, class X>
concept split_heads_accepts = detail::split_heads_accepted<false, Heads, X>();

/// Views x (batch, seq, model<Heads*DK>) as Heads heads (batch, head<Heads>, seq, head_dim<DK>).
///
/// Checks, in order, reporting the first that fails: x is a tensor, view or expression and not
/// a temporary tensor; its axes are (batch, seq, model); Heads >= 1; Heads divides its width.
template <std::size_t Heads, class X>
constexpr auto split_heads(X&& x) {
  if constexpr (!detail::split_heads_accepted<true, Heads, X>()) {
    return detail::rejected{};
  } else {
    return split_heads_node<Heads, expression_t<X>>{as_expression(std::forward<X>(x))};
  }
}

}  // namespace argus
