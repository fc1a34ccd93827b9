// Compile-only checks of the expression layer (STYLE.md section 6): which operands each entry
// point accepts, the shape type of each result (static extents propagate, dyn stays dyn), and a
// rejection, one comment each, for every relation an entry point checks.
//
// Entry points report a misuse with a static_assert (a hard error, so a requires-expression
// cannot observe it); each has an `<entry>_accepts` concept with the same rules, in the same
// order, without the report, which is what these in-process checks read.
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_concepts.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace static_expr_test {

using argus::batch;
using argus::dyn;
using argus::head;
using argus::head_dim;
using argus::model;
using argus::seq;
using argus::shape;
using argus::tensor;

// ---- One concept per entry point: "this call compiles" -----------------------------------

template <std::size_t Heads, class X>
concept can_split_heads = argus::split_heads_accepts<Heads, X>;
template <class X>
concept can_merge_heads = argus::merge_heads_accepts<X>;
template <class X, class W>
concept can_project = argus::project_accepts<X, W>;
template <class X, class W, class B>
concept can_project_with_bias = argus::project_accepts<X, W, B>;
template <class Q, class K>
concept can_score = argus::scores_accepts<Q, K>;
template <class E, class M>
concept can_mask = argus::mask_accepts<E, const M&>;
template <class E>
concept can_softmax = argus::softmax_accepts<E>;
template <class P, class V>
concept can_attend = argus::attend_accepts<P, V>;
template <class P>
concept can_ignore_keys = argus::ignore_keys_accepts<P>;
template <class P>
concept can_ignore_where = argus::ignore_where_accepts<P>;
template <class P>
concept can_add_to_scores = argus::add_to_scores_accepts<P>;

// The result type of an entry point, for the shape checks below.
template <std::size_t Heads, class X>
using split_t = decltype(argus::split_heads<Heads>(std::declval<X>()));
template <class Q, class K>
using scores_t = decltype(argus::scores(std::declval<Q>(), std::declval<K>()));
template <class P, class V>
using attend_t = decltype(argus::attend(std::declval<P>(), std::declval<V>()));
template <class X, class W>
using project_t = decltype(argus::project(std::declval<X>(), std::declval<W>()));

// ---- Operands ----------------------------------------------------------------------------

using activation = tensor<float, shape<batch<2>, seq<16>, model<64>>>;
using activation_view = argus::tensor_view<const float, shape<batch<2>, seq<16>, model<64>>>;

static_assert(argus::Tensor<activation> && !argus::TensorView<activation>);
static_assert(argus::TensorView<activation_view> && !argus::Tensor<activation_view>);
static_assert(argus::TensorLike<const activation&> && argus::TensorLike<activation_view>);
static_assert(!argus::TensorLike<int>);

static_assert(argus::Operand<const activation&>);  // a named tensor: held by reference
static_assert(argus::Operand<activation&>);
static_assert(!argus::Operand<activation>);    // a temporary tensor would dangle
static_assert(!argus::Operand<activation&&>);  // so would a moved-from one
static_assert(!argus::operand_is_not_a_temporary_tensor<activation>);
static_assert(argus::Operand<activation_view>);  // a view is a value: a temporary one is fine
static_assert(argus::Operand<split_t<8, const activation&>>);  // an expression is a value
static_assert(!argus::Operand<int>);

static_assert(!argus::Expression<activation>);  // a tensor becomes an expression as a leaf
static_assert(argus::Expression<argus::expression_t<const activation&>>);
static_assert(std::is_same_v<argus::expression_t<const activation&>,
                             argus::leaf<const float, shape<batch<2>, seq<16>, model<64>>>>);
static_assert(argus::Expression<split_t<8, const activation&>>);
// An expression is its own expression type however it is passed: a temporary is moved, a const
// one copied (never a const node type, which no evaluator's pattern would match).
static_assert(std::is_same_v<argus::expression_t<split_t<8, const activation&>>,
                             split_t<8, const activation&>>);
static_assert(std::is_same_v<argus::expression_t<const split_t<8, const activation&>>,
                             split_t<8, const activation&>>);
static_assert(std::is_same_v<argus::expression_t<const split_t<8, const activation&>&>,
                             split_t<8, const activation&>>);
static_assert(
    std::is_same_v<argus::shape_of<const activation&>, shape<batch<2>, seq<16>, model<64>>>);
static_assert(std::is_same_v<argus::value_type_of<const activation&>, float>);
static_assert(argus::extent_of<const activation&, 2> == 64);

// A temporary tensor is rejected by every entry point (named tensors and views are fine).
static_assert(can_split_heads<8, const activation&> && can_split_heads<8, activation_view>);
static_assert(!can_split_heads<8, activation>);  // temporary tensor
static_assert(!can_merge_heads<activation>);     // temporary tensor

// ---- split_heads and merge_heads ---------------------------------------------------------

using activation_dyn = tensor<float, shape<batch<>, seq<>, model<64>>>;
using transposed = tensor<float, shape<batch<2>, model<64>, seq<64>>>;

static_assert(std::is_same_v<split_t<8, const activation&>::shape_type,
                             shape<batch<2>, head<8>, seq<16>, head_dim<8>>>);  // d_k = 64 / 8
static_assert(std::is_same_v<split_t<8, const activation_dyn&>::shape_type,
                             shape<batch<dyn>, head<8>, seq<dyn>, head_dim<8>>>);  // dyn stays dyn
static_assert(std::is_same_v<split_t<1, const activation&>::shape_type,
                             shape<batch<2>, head<1>, seq<16>, head_dim<64>>>);
static_assert(!can_split_heads<7, const activation&>);  // 64 % 7 != 0
static_assert(!can_split_heads<0, const activation&>);  // no heads
static_assert(!can_split_heads<8, const transposed&>);  // (batch, model, seq): axes, not sizes
static_assert(!can_split_heads<8, split_t<8, const activation&>>);  // already split

static_assert(std::is_same_v<decltype(argus::merge_heads(
                                 std::declval<split_t<8, const activation&>>()))::shape_type,
                             shape<batch<2>, seq<16>, model<64>>>);  // merge undoes split
static_assert(std::is_same_v<decltype(argus::merge_heads(
                                 std::declval<split_t<8, const activation_dyn&>>()))::shape_type,
                             shape<batch<dyn>, seq<dyn>, model<64>>>);
static_assert(!can_merge_heads<const activation&>);  // not split into heads

// ---- project -----------------------------------------------------------------------------

using weight = tensor<float, shape<model<64>, model<32>>>;  // stacked (Din, Dout)
using weight_double = tensor<double, shape<model<64>, model<32>>>;
using weight_narrow = tensor<float, shape<model<48>, model<32>>>;
using per_head_weight = tensor<float, shape<head<4>, model<64>, head_dim<8>>>;  // (H, Din, DK)
using slice_weight = tensor<float, shape<head<8>, model<8>, head_dim<4>>>;      // (H, Din/H, DK)
using bias = tensor<float, shape<model<32>>>;
using bias_short = tensor<float, shape<model<16>>>;
using per_head_bias = tensor<float, shape<head<4>, head_dim<8>>>;

static_assert(std::is_same_v<project_t<const activation&, const weight&>::shape_type,
                             shape<batch<2>, seq<16>, model<32>>>);  // stacked
static_assert(std::is_same_v<project_t<const activation_dyn&, const weight&>::shape_type,
                             shape<batch<dyn>, seq<dyn>, model<32>>>);  // dyn stays dyn
static_assert(std::is_same_v<project_t<const activation&, const per_head_weight&>::shape_type,
                             shape<batch<2>, head<4>, seq<16>, head_dim<8>>>);  // per head
static_assert(
    std::is_same_v<project_t<split_t<8, const activation&>, const slice_weight&>::shape_type,
                   shape<batch<2>, head<8>, seq<16>, head_dim<4>>>);  // narrow
static_assert(can_project_with_bias<const activation&, const weight&, const bias&>);
static_assert(
    can_project_with_bias<const activation&, const per_head_weight&, const per_head_bias&>);
static_assert(can_project_with_bias<const activation&, const weight&, argus::no_bias>);

static_assert(can_project<const activation&, const weight&>);
static_assert(
    !can_project<const activation&, const weight_narrow&>);  // x is 64 wide, W has 48 rows
static_assert(!can_project<const activation&, const weight_double&>);  // float x, double W
static_assert(
    !can_project_with_bias<const activation&, const weight&, const bias_short&>);  // 16 != 32
static_assert(!can_project_with_bias<const activation&, const weight&, int>);  // not a bias at all
// The bias has its weight's form: 32 entries either way, but per head for a stacked W, stacked
// for a per-head one, or per head for other heads (8 of 4 for 4 of 8).
using per_head_bias_other_heads = tensor<float, shape<head<8>, head_dim<4>>>;
static_assert(!can_project_with_bias<const activation&, const weight&, const per_head_bias&>);
static_assert(!can_project_with_bias<const activation&, const per_head_weight&, const bias&>);
static_assert(!can_project_with_bias<const activation&, const per_head_weight&,
                                     const per_head_bias_other_heads&>);
static_assert(!can_project<split_t<8, const activation&>,
                           const per_head_weight&>);  // 4 weight heads, 8 input heads
static_assert(
    !can_project<split_t<8, const activation&>, const weight&>);  // split input, stacked W
static_assert(!can_project<const transposed&, const weight&>);  // not an activation nor split heads
static_assert(!can_project<const activation&, const activation&>);  // not a weight
static_assert(!can_project<activation, const weight&>);             // temporary tensor

// ---- scores ------------------------------------------------------------------------------

template <std::size_t B, std::size_t H, std::size_t S, std::size_t D>
using heads = tensor<float, shape<batch<B>, head<H>, seq<S>, head_dim<D>>>;
using heads_dyn = tensor<float, shape<batch<>, head<8>, seq<>, head_dim<8>>>;
using heads_double = tensor<double, shape<batch<2>, head<8>, seq<12>, head_dim<8>>>;

// (B,H,Sq,DK) and (B,G,Skv,DK) give (B,H,Sq,Skv).
static_assert(
    std::is_same_v<scores_t<const heads<2, 8, 16, 8>&, const heads<2, 2, 12, 8>&>::shape_type,
                   shape<batch<2>, head<8>, seq<16>, seq<12>>>);
static_assert(std::is_same_v<scores_t<const heads_dyn&, const heads_dyn&>::shape_type,
                             shape<batch<dyn>, head<8>, seq<dyn>, seq<dyn>>>);  // dyn stays dyn
static_assert(std::is_same_v<scores_t<const heads<2, 8, 16, 8>&, const heads_dyn&>::shape_type,
                             shape<batch<2>, head<8>, seq<16>, seq<dyn>>>);
static_assert(std::is_same_v<
              scores_t<const heads<2, 8, 16, 8>&, const heads<2, 8, 12, 8>&>::value_type, float>);
static_assert(can_score<split_t<8, const activation&>, split_t<8, const activation&>>);
static_assert(
    can_score<const heads<2, 8, 16, 8>&, const heads_dyn&>);  // batch 2 vs dyn: checked at run time

static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads<2, 8, 12, 16>&>);  // d_k 8 vs 16
static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads<2, 3, 12, 8>&>);   // 8 % 3 != 0
static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads<3, 8, 12, 8>&>);   // batch 2 vs 3
static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads_double&>);    // float vs double
static_assert(!can_score<const activation&, split_t<8, const activation&>>);  // queries not split
static_assert(!can_score<split_t<8, const activation&>, const activation&>);  // keys not split
// Widths are static on every operand: head<dyn> or head_dim<dyn> keys, and split heads of a
// model<dyn> activation, are refused (model_width_is_static).
using heads_run_time_count = tensor<float, shape<batch<2>, head<dyn>, seq<12>, head_dim<8>>>;
using heads_run_time_width = tensor<float, shape<batch<2>, head<8>, seq<12>, head_dim<dyn>>>;
using activation_run_time_width = tensor<float, shape<batch<2>, seq<16>, model<dyn>>>;
static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads_run_time_count&>);
static_assert(!can_score<const heads<2, 8, 16, 8>&, const heads_run_time_width&>);
static_assert(!argus::split_heads_accepts<8, const activation_run_time_width&>);

// ---- masks -------------------------------------------------------------------------------

using scores = tensor<float, shape<batch<2>, head<8>, seq<16>, seq<12>>>;
using scores_dyn = tensor<float, shape<batch<>, head<8>, seq<>, seq<>>>;
template <std::size_t B, std::size_t S>
using padding = tensor<std::uint8_t, shape<batch<B>, seq<S>>>;
template <std::size_t Q, std::size_t K>
using pair_mask = tensor<bool, shape<seq<Q>, seq<K>>>;
template <std::size_t Q, std::size_t K>
using additive = tensor<float, shape<seq<Q>, seq<K>>>;
using keys_mask = decltype(argus::ignore_keys(std::declval<const padding<2, 12>&>()));
using pairs_mask = decltype(argus::ignore_where(std::declval<const pair_mask<16, 12>&>()));

static_assert(argus::Mask<argus::causal_mask> && argus::Mask<keys_mask> && argus::Mask<pairs_mask>);
static_assert(argus::Mask<decltype(argus::add_to_scores(std::declval<const additive<16, 12>&>()))>);
static_assert(!argus::Mask<padding<2, 12>>);  // a tensor is not a mask: say how it masks
// A kind of one's own: its static constraints are checked as the built-in kinds' are.
struct fixed_block {  // a (16, 12) pattern
  using mask_effect = argus::ignores_pairs;
  static constexpr argus::mask_constraints constraints{.rows = 16, .cols = 12};
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return i / 4 != j / 3;
  }
  static std::string name() { return "fixed_block"; }
};
static_assert(argus::Mask<fixed_block> && argus::mask_accepts<const scores&, fixed_block>);
static_assert(argus::mask_accepts<const scores_dyn&, fixed_block>);  // run-time lengths
static_assert(!argus::mask_accepts<const tensor<float, shape<batch<2>, head<8>, seq<12>, seq<16>>>&,
                                   fixed_block>);  // mask_rows_equal_seq_q: 16 != 12
static_assert(!argus::Mask<int> && !argus::Mask<std::string>);
// ignores_block: any member of that name is found (a function of any signature, a template, a
// final class's), and only the documented one on a kind that ignores pairs is accepted.
template <class Block>
struct with_block : fixed_block, Block {};
struct block_documented {
  bool ignores_block(std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                     std::size_t) const {
    return false;
  }
};
struct block_template {
  template <class... I>
  bool ignores_block(I...) const {
    return false;
  }
};
struct block_ranges_only {  // leaves out b and h
  bool ignores_block(std::size_t, std::size_t, std::size_t, std::size_t) const { return false; }
};
struct block_not_const {
  bool ignores_block(std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t) {
    return false;
  }
};
struct block_data {
  bool ignores_block = false;
};
struct final_block final : fixed_block, block_documented {};
struct final_block_wrong final : fixed_block, block_ranges_only {};
static_assert(argus::ignores_block_takes_b_h_and_two_ranges<fixed_block>);  // none: fine
static_assert(argus::ignores_block_takes_b_h_and_two_ranges<with_block<block_documented>>);
static_assert(argus::ignores_block_takes_b_h_and_two_ranges<with_block<block_template>>);
static_assert(argus::ignores_block_takes_b_h_and_two_ranges<final_block>);
static_assert(!argus::ignores_block_takes_b_h_and_two_ranges<with_block<block_ranges_only>>);
static_assert(!argus::ignores_block_takes_b_h_and_two_ranges<with_block<block_not_const>>);
static_assert(!argus::ignores_block_takes_b_h_and_two_ranges<with_block<block_data>>);
static_assert(!argus::ignores_block_takes_b_h_and_two_ranges<final_block_wrong>);
static_assert(argus::mask_accepts<const scores&, with_block<block_documented>> &&
              !argus::mask_accepts<const scores&, with_block<block_ranges_only>>);
// Causal masks: query i attends key j iff j <= i + offset (0 top-left; seq_kv - seq_q
// bottom-right).
static_assert(!argus::causal.ignores(3, 3) && argus::causal.ignores(3, 4));
static_assert(argus::causal_from(2).reach(0) == 3 && !argus::causal_from(2).ignores(0, 2));
static_assert(argus::causal_from(-2).reach(1) == 0 && argus::causal_from(-2).reach(2) == 1);
static_assert(argus::causal_lower_right(4, 10).offset == 6 &&
              argus::causal_lower_right(4, 10).reach(3) == 10);  // the last query sees every key
static_assert(argus::causal_lower_right(10, 4).offset == -6 &&
              argus::causal_lower_right(10, 4).reach(5) == 0);  // queries before the keys: none
static_assert(argus::causal_from(PTRDIFF_MIN).reach(std::size_t{1} << 40) == 0);  // no overflow
static_assert(argus::causal_from(PTRDIFF_MAX).reach(0) == std::size_t{PTRDIFF_MAX} + 1);
static_assert(argus::Mask<decltype(argus::causal_lower_right(4, 10))>);
// A window of w keys: query i attends i + offset - w < j <= i + offset.
static_assert(argus::sliding_window(3).first(10) == 8 && argus::sliding_window(3).reach(10) == 11);
static_assert(argus::sliding_window(3).ignores(10, 7) && !argus::sliding_window(3).ignores(10, 8));
static_assert(argus::sliding_window(3).first(1) == 0);  // the window starts before key 0
static_assert(argus::sliding_window(0).first(5) == argus::sliding_window(0).reach(5));  // no key
static_assert(argus::causal_lower_right(4, 10).windowed(2).first(0) == 5);
static_assert(argus::causal.first(1000) == 0);  // no window: every key up to the diagonal
// fitted(sq, skv): the same pairs, with the offset in [-sq, skv] and a window of at most
// sq + skv + 1 (an offset past skv shrinks the window by as much).
static_assert(argus::causal_from(25).windowed(20).fitted(4, 10).offset == 10 &&
              argus::causal_from(25).windowed(20).fitted(4, 10).window == 5);
static_assert(argus::causal_from(25).windowed(20).fitted(4, 10).first(3) ==
              argus::causal_from(25).windowed(20).first(3));
static_assert(argus::causal_from(25).windowed(3).fitted(4, 10).window == 0);
static_assert(argus::causal_from(-99).fitted(4, 10).offset == -4);
static_assert(argus::sliding_window(99).fitted(4, 10).window == argus::causal_mask::every_key);
static_assert(can_ignore_keys<const tensor<bool, shape<batch<2>, seq<12>>>&>);
static_assert(
    !can_ignore_keys<const tensor<float, shape<batch<2>, seq<12>>>&>);  // float: add_to_scores
static_assert(!can_ignore_keys<const pair_mask<16, 12>&>);              // (seq, seq): ignore_where
static_assert(!can_ignore_where<const padding<2, 12>&>);                // (batch, seq): ignore_keys
static_assert(!can_ignore_where<const additive<16, 12>&>);              // float: add_to_scores
static_assert(!can_add_to_scores<const tensor<int, shape<seq<16>, seq<12>>>&>);  // int logits
static_assert(!can_add_to_scores<const padding<2, 12>&>);                        // (batch, seq)
static_assert(!can_ignore_keys<padding<2, 12>>);                                 // temporary tensor

static_assert(
    std::is_same_v<decltype(argus::mask(std::declval<const scores&>(), argus::causal))::shape_type,
                   shape<batch<2>, head<8>, seq<16>, seq<12>>>);  // a mask keeps the shape
static_assert(can_mask<const scores&, argus::causal_mask>);
static_assert(can_mask<const scores&, keys_mask> && can_mask<const scores&, pairs_mask>);
static_assert(can_mask<const scores&,
                       decltype(argus::add_to_scores(std::declval<const additive<16, 12>&>()))>);
static_assert(can_mask<const scores_dyn&, keys_mask>);  // scores' extents dyn: checked at run time
static_assert(can_mask<const scores&,
                       decltype(argus::ignore_keys(std::declval<const padding<dyn, dyn>&>()))>);
static_assert(
    !can_mask<const scores&, decltype(argus::ignore_keys(
                                 std::declval<const padding<2, 16>&>()))>);  // 16 entries, 12 keys
static_assert(
    !can_mask<const scores&, decltype(argus::ignore_keys(
                                 std::declval<const padding<3, 12>&>()))>);  // batch 3 vs 2
static_assert(!can_mask<const scores&,
                        decltype(argus::ignore_where(
                            std::declval<const pair_mask<20, 12>&>()))>);  // 20 rows, 16 queries
static_assert(!can_mask<const scores&,
                        decltype(argus::ignore_where(
                            std::declval<const pair_mask<16, 16>&>()))>);  // 16 columns, 12 keys
static_assert(!can_mask<const scores&, decltype(argus::add_to_scores(
                                           std::declval<const additive<20, 12>&>()))>);  // 20 rows
static_assert(
    !can_mask<
        const scores&,
        decltype(argus::add_to_scores(
            std::declval<const tensor<double, shape<seq<16>, seq<12>>>&>()))>);  // double logits,
                                                                                 // float scores
static_assert(!can_mask<const heads<2, 8, 16, 8>&, argus::causal_mask>);         // not scores
static_assert(!can_mask<const scores&, padding<2, 12>>);                         // not a mask

// ---- softmax and attend ------------------------------------------------------------------

static_assert(std::is_same_v<decltype(argus::softmax(std::declval<const scores&>()))::shape_type,
                             shape<batch<2>, head<8>, seq<16>, seq<12>>>);
static_assert(can_softmax<const scores&> && can_softmax<const scores_dyn&>);
static_assert(
    !can_softmax<const heads<2, 8, 16, 16>&>);  // (batch, head, seq, head_dim): not scores
static_assert(!can_softmax<const activation&>);

// (B,H,Sq,Skv) and (B,G,Skv,DV) give (B,H,Sq,DV).
static_assert(std::is_same_v<attend_t<const scores&, const heads<2, 2, 12, 4>&>::shape_type,
                             shape<batch<2>, head<8>, seq<16>, head_dim<4>>>);
static_assert(std::is_same_v<attend_t<const scores_dyn&, const heads_dyn&>::shape_type,
                             shape<batch<dyn>, head<8>, seq<dyn>, head_dim<8>>>);  // dyn stays dyn
static_assert(can_attend<const scores&, const heads<2, 8, 12, 8>&>);
static_assert(
    can_attend<const scores&, const heads_dyn&>);  // 12 keys vs dyn values: checked at run time
static_assert(!can_attend<const scores&, const heads<2, 8, 10, 8>&>);  // 12 keys, 10 values
static_assert(!can_attend<const scores&, const heads<3, 8, 12, 8>&>);  // batch 2 vs 3
static_assert(!can_attend<const scores&, const heads<2, 3, 12, 8>&>);  // 8 % 3 != 0
static_assert(
    !can_attend<
        const scores&,
        const tensor<double, shape<batch<2>, head<8>, seq<12>, head_dim<8>>>&>);  // float vs double
static_assert(!can_attend<const heads<2, 8, 16, 12>&,
                          const heads<2, 8, 12, 8>&>);         // weights must be (b, h, seq, seq)
static_assert(!can_attend<const scores&, const activation&>);  // values not split

// The whole chain, built from the parts.
using chain_t = decltype(argus::merge_heads(argus::attend(
    argus::softmax(argus::mask(argus::scores(std::declval<split_t<8, const activation&>>(),
                                             std::declval<split_t<8, const activation&>>()),
                               argus::causal)),
    std::declval<split_t<8, const activation&>>())));
static_assert(std::is_same_v<chain_t::shape_type, shape<batch<2>, seq<16>, model<64>>>);
static_assert(argus::expression_has_attention_weights<chain_t>);
static_assert(!argus::expression_has_attention_weights<split_t<8, const activation&>>);

}  // namespace static_expr_test
