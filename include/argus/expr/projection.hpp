// argus/expr/projection.hpp -- expression layer: x·W + b, the paper's x-times-W projection.
//
// Three forms, told apart by the axes of the operands:
//   stacked    x (B,S,model<Din>)          · W (model<Din>, model<Dout>)          ->
//   (B,S,model<Dout>) per head   x (B,S,model<Din>)          · W (head<H>, model<Din>,
//   head_dim<DK>) -> (B,H,S,head_dim<DK>) narrow     x (B,head<H>,S,head_dim<Din>) · W (head<H>,
//   model<Din>, head_dim<DK>) -> (B,H,S,head_dim<DK>)
// The narrow form is "each head projects only its d_model/h slice of x":
// project(split_heads<H>(x), W). The bias is (model<Dout>) for a stacked weight and
// (head<H>, head_dim<DK>) for a per-head one.
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

#include <cstddef>

namespace argus {

/// The absent bias of a projection.
struct no_bias {};

namespace detail {
template <Shape X>
inline constexpr std::size_t input_width = static_extent_v<X, X::rank() - 1>;
template <Shape W>
inline constexpr std::size_t weight_rows = static_extent_v<W, W::rank() - 2>;
template <Shape W>
inline constexpr std::size_t weight_cols = static_extent_v<W, W::rank() - 1>;
template <Shape W>
inline constexpr std::size_t weight_heads = W::rank() == 3 ? static_extent_v<W, 0> : 0;
template <Shape W>
inline constexpr bool per_head_weight = W::rank() == 3;
// The heads of a per-head bias (H,DK); a stacked bias (Dout) counts as having the weight's
// heads (0), so that bias_heads_equal_weight_heads holds for it (a conjunct, as below).
template <Shape B>
inline constexpr std::size_t bias_heads = B::rank() == 2 ? static_extent_v<B, 0> : 0;
// The heads of a split input (B,H,S,Din). An unsplit input (B,S,Din) counts as having the
// weight's heads, so weight_heads_equal_input_heads holds for it: the relation stays a conjunct
// (GCC does not look inside a disjunction, so `rank == 3 || relation` hid its name).
template <Shape X, Shape W>
inline constexpr std::size_t input_heads = X::rank() == 4 ? static_extent_v<X, 1> : weight_heads<W>;
// The columns of x·W: Dout for a stacked weight, H·DK for a per-head one.
template <Shape W>
inline constexpr std::size_t projection_width = weight_cols<W>*(W::rank() == 3
                                                                    ? static_extent_v<W, 0>
                                                                    : 1);

template <class X, class W>
struct projection_shape;
// clang-format off
template <Shape X, Shape W>
requires(W::rank() == 2) struct projection_shape<X, W> {
  using type = shape<axis_t<X, 0>, axis_t<X, 1>, model<weight_cols<W>>>;
  // clang-format on
};
// clang-format off
template <Shape X, Shape W>
requires(W::rank() == 3) struct projection_shape<X, W> {
  using type = shape<axis_t<X, 0>, head<static_extent_v<W, 0>>, axis_t<X, X::rank() - 2>,
                     head_dim<weight_cols<W>>>;
  // clang-format on
};

}  // namespace detail

template <Expression X, Expression W, class B>
struct projection {
  static constexpr bool is_expression = true;
  using value_type = typename X::value_type;
  using shape_type =
      typename detail::projection_shape<typename X::shape_type, typename W::shape_type>::type;
  static constexpr bool per_head = W::shape_type::rank() == 3;
  static constexpr bool split_input = X::shape_type::rank() == 4;
  static constexpr bool has_bias = !std::is_same_v<B, no_bias>;

  X x;
  W w;
  B b;

  shape_type shape() const {
    const auto xs = x.shape();
    if constexpr (per_head)
      return shape_type::from_extents({xs.extent(0), static_extent_v<shape_type, 1>,
                                       xs.extent(X::shape_type::rank() - 2),
                                       static_extent_v<shape_type, 3>});
    else
      return shape_type::from_extents({xs.extent(0), xs.extent(1), static_extent_v<shape_type, 2>});
  }
};

/// x·W + b (b optional). See the header comment for the three forms.
namespace detail {
/// The rules of project(x, w[, b]), in the order they are reported; true when all hold. With
/// Report, the first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class X, class W, class B>
constexpr bool project_accepted() {
  constexpr bool biased = !std::is_same_v<std::remove_cvref_t<B>, no_bias>;
  // A chain of rules: several end in `return false` (bugprone-branch-clone), one per rule.
  // NOLINTNEXTLINE(bugprone-branch-clone)
  if constexpr (!operands_accepted<Report, X, W>()) {
    return false;
  } else if constexpr (!axes_are_an_activation_or_split_heads<shape_of<X>>) {
    if constexpr (Report)
      static_assert(axes_are_an_activation_or_split_heads<shape_of<X>>,
                    "axes_are_an_activation_or_split_heads: argus::project(x, w) takes x of axes "
                    "(batch, seq, model) or split heads (batch, head, seq, head_dim)");
    return false;
  } else if constexpr (!axes_are_a_stacked_or_per_head_weight<shape_of<W>>) {
    if constexpr (Report)
      static_assert(axes_are_a_stacked_or_per_head_weight<shape_of<W>>,
                    "axes_are_a_stacked_or_per_head_weight: argus::project(x, w) takes w of axes "
                    "(model, model) or per head (head, model, head_dim)");
    return false;
  } else if constexpr (!model_width_is_static<detail::input_width<shape_of<X>>> ||
                       !model_width_is_static<detail::weight_rows<shape_of<W>>> ||
                       !model_width_is_static<detail::weight_cols<shape_of<W>>>) {
    if constexpr (Report)
      static_assert(model_width_is_static<detail::input_width<shape_of<X>>> &&
                        model_width_is_static<detail::weight_rows<shape_of<W>>> &&
                        model_width_is_static<detail::weight_cols<shape_of<W>>>,
                    "model_width_is_static: argus::project(x, w) needs compile-time widths of x "
                    "and w; only batch and seq may be argus::dyn");
    return false;
  } else if constexpr (!value_types_agree<value_type_of<X>, value_type_of<W>>) {
    if constexpr (Report)
      static_assert(value_types_agree<value_type_of<X>, value_type_of<W>>,
                    "value_types_agree: argus::project(x, w) takes x and w of one value type");
    return false;
  } else if constexpr (!input_width_equals_weight_rows<detail::input_width<shape_of<X>>,
                                                       detail::weight_rows<shape_of<W>>>) {
    if constexpr (Report)
      static_assert(input_width_equals_weight_rows<detail::input_width<shape_of<X>>,
                                                   detail::weight_rows<shape_of<W>>>,
                    "input_width_equals_weight_rows: argus::project(x, w) needs the width of x to "
                    "be the number of rows of w");
    return false;
  } else if constexpr (!weight_heads_equal_input_heads<
                           detail::weight_heads<shape_of<W>>,
                           detail::input_heads<shape_of<X>, shape_of<W>>>) {
    if constexpr (Report)
      static_assert(weight_heads_equal_input_heads<detail::weight_heads<shape_of<W>>,
                                                   detail::input_heads<shape_of<X>, shape_of<W>>>,
                    "weight_heads_equal_input_heads: argus::project(split_heads<H>(x), w) needs a "
                    "per-head w of H heads");
    return false;
  } else if constexpr (!biased) {  // NOLINT(bugprone-branch-clone): no bias, nothing to check
    return true;
  } else if constexpr (!operands_accepted<Report, B>()) {
    return false;
  } else if constexpr (!axes_are_a_bias<shape_of<B>, detail::per_head_weight<shape_of<W>>>) {
    if constexpr (Report)
      static_assert(
          axes_are_a_bias<shape_of<B>, detail::per_head_weight<shape_of<W>>>,
          "axes_are_a_bias: argus::project(x, w, b) takes b of axes (model) for a stacked "
          "w, (head, head_dim) for a per-head one");
    return false;
  } else if constexpr (!value_types_agree<value_type_of<X>, value_type_of<B>>) {
    if constexpr (Report)
      static_assert(value_types_agree<value_type_of<X>, value_type_of<B>>,
                    "value_types_agree: argus::project(x, w, b) takes b of the value type of x");
    return false;
  } else if constexpr (!bias_heads_equal_weight_heads<detail::bias_heads<shape_of<B>>,
                                                      detail::weight_heads<shape_of<W>>>) {
    if constexpr (Report)
      static_assert(bias_heads_equal_weight_heads<detail::bias_heads<shape_of<B>>,
                                                  detail::weight_heads<shape_of<W>>>,
                    "bias_heads_equal_weight_heads: argus::project(x, w, b) with a per-head w "
                    "of H heads needs a per-head b of H heads");
    return false;
  } else if constexpr (!bias_length_equals_weight_cols<shape_of<B>::static_size(),
                                                       detail::projection_width<shape_of<W>>>) {
    if constexpr (Report)
      static_assert(bias_length_equals_weight_cols<shape_of<B>::static_size(),
                                                   detail::projection_width<shape_of<W>>>,
                    "bias_length_equals_weight_cols: argus::project(x, w, b) needs one bias per "
                    "column of w");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when project(x, w[, b]) compiles (the same rules, without the report): for in-process
/// tests.
template <class X, class W, class B = no_bias>
concept project_accepts = detail::project_accepted<false, X, W, B>();

template <class X, class W, class B = no_bias>
constexpr auto project(X&& x, W&& w, B&& b = {}) {
  if constexpr (!detail::project_accepted<true, X, W, B>()) {
    return detail::rejected{};
  } else if constexpr (std::is_same_v<std::remove_cvref_t<B>, no_bias>) {
    return projection<expression_t<X>, expression_t<W>, no_bias>{
        as_expression(std::forward<X>(x)), as_expression(std::forward<W>(w)), no_bias{}};
  } else {
    return projection<expression_t<X>, expression_t<W>, expression_t<B>>{
        as_expression(std::forward<X>(x)), as_expression(std::forward<W>(w)),
        as_expression(std::forward<B>(b))};
  }
}

}  // namespace argus
