// argus/diagnostics/relations.hpp -- diagnostics layer: every relation argus checks at
// compile time, each a concept whose name is the relation in words.
//
// Public entry points put these in their requires-clause, so a violation reads, with
// Clang, "because 'heads_divide_d_model<512UL, 7UL>' evaluated to false", and with GCC,
// "required for the satisfaction of 'heads_divide_d_model<DModel, Heads>' [with DModel =
// 512; Heads = 7]". A relation between extents of which one is a run-time extent (dyn)
// holds here and is checked at run time instead (check.hpp). docs/reference/diagnostics.md
// shows the real message of each.
#pragma once

#include <argus/shape/extent.hpp>
#include <argus/shape/shape.hpp>

#include <cstddef>
#include <type_traits>

namespace argus {

// --- The module's configuration -------------------------------------------------------

/// d_k = d_model / heads needs heads to divide d_model (only when d_k is derived that way:
/// a module given its d_k explicitly passes DKDerived = false).
template <std::size_t DModel, std::size_t Heads, bool DKDerived = true>
concept heads_divide_d_model = Heads != 0 && DModel % (DKDerived ? Heads : 1) == 0;

/// Grouped-query attention: each key/value head serves heads / kv_heads query heads.
template <std::size_t Heads, std::size_t KVHeads>
concept kv_heads_divide_heads = KVHeads != 0 && Heads % KVHeads == 0;

/// m.forward(...) and forward_for_training(m, ...) keep references to m's weights (the
/// expression, the tape): m is a named module (an lvalue), never a temporary, gone at the end of
/// the statement. ModuleRef is how the call received m.
template <class ModuleRef>
concept module_is_not_a_temporary = std::is_lvalue_reference_v<ModuleRef>;

/// Model widths (d_model, kdim, vdim, heads, head widths) are compile-time extents; only batch
/// and seq may be run-time (dyn).
template <std::size_t Width>
concept model_width_is_static = Width != dyn;

namespace detail {
/// a · b, or 0 when the product does not fit in std::size_t (no width is 0 here).
constexpr std::size_t product_or_zero(std::size_t a, std::size_t b) noexcept {
  return b != 0 && a > static_cast<std::size_t>(-1) / b ? 0 : a * b;
}
/// Whether a weight of rows × cols elements, cols = heads · width, fits: no product wraps and
/// the element count is at most max_elements (PTRDIFF_MAX).
constexpr bool weight_fits(std::size_t rows, std::size_t heads, std::size_t width) noexcept {
  const std::size_t cols = product_or_zero(heads, width);
  return cols != 0 && element_count_fits(std::array<std::size_t, 2>{rows, cols});
}
}  // namespace detail

/// A module's weights have extents heads · d_k, kv_heads · d_v and the like: those products,
/// and each weight's element count, fit in a tensor (at most PTRDIFF_MAX elements; computed in
/// std::size_t they would otherwise wrap, to 0 for d_k = 2^63 and 2 heads).
template <std::size_t DModel, std::size_t KDim, std::size_t VDim, std::size_t Heads,
          std::size_t KVHeads, std::size_t DK, std::size_t DV>
concept module_widths_fit_in_a_tensor = detail::weight_fits(DModel, Heads, DK) &&
    detail::weight_fits(KDim, KVHeads,
                        DK) && detail::weight_fits(VDim, KVHeads,
                                                   DV) && detail::weight_fits(DModel, Heads, DV);

/// Every width in a configuration is at least 1.
template <std::size_t Width>
concept width_is_positive = Width != 0;

/// The inputs of a module: x_q is d_model wide, x_k kdim wide, x_v vdim wide.
template <std::size_t QueryWidth, std::size_t DModel>
concept query_width_equals_d_model = QueryWidth == DModel;
template <std::size_t KeyWidth, std::size_t KDim>
concept key_width_equals_kdim = KeyWidth == KDim;
template <std::size_t ValueWidth, std::size_t VDim>
concept value_width_equals_vdim = ValueWidth == VDim;

/// multi_head_attention::forward takes one input (self-attention) or three (x_q, x_k, x_v)
/// before its masks.
template <std::size_t Inputs>
concept forward_takes_one_or_three_inputs = Inputs % 2 == 1 && Inputs <= 3;

// --- Weights and biases ---------------------------------------------------------------

/// multi_head_attention is built from nothing (weights zero), from its four weights (w_q, w_k,
/// w_v, w_o) or from its four weights and four biases (b_q, b_k, b_v, b_o): 0, 4 or 8 arguments,
/// written as a conjunction, whose failing term GCC shows with the count (a disjunction's not).
template <std::size_t Arguments>
concept module_takes_four_weights_or_eight_tensors = Arguments % 4 == 0 && Arguments <= 8;

/// The eight-argument constructor (weights and biases) needs a module with biases.
template <bool HasBias>
concept module_has_biases = HasBias;

/// prepacked_attention<Module> packs the weights of one module of type Module (or of a class
/// derived from it): it is built from that module and nothing else.
template <class Module, class... Args>
concept prepacked_attention_takes_its_module =
    sizeof...(Args) == 1 && (std::is_base_of_v<Module, std::remove_cvref_t<Args>> && ...);

template <std::size_t Rows, std::size_t DModel>
concept w_q_rows_equal_d_model = Rows == DModel;
template <std::size_t Cols, std::size_t Heads, std::size_t DK>
concept w_q_cols_equal_heads_times_d_k = Cols == Heads* DK;
template <std::size_t Rows, std::size_t KDim>
concept w_k_rows_equal_kdim = Rows == KDim;
template <std::size_t Cols, std::size_t KVHeads, std::size_t DK>
concept w_k_cols_equal_kv_heads_times_d_k = Cols == KVHeads* DK;
template <std::size_t Rows, std::size_t VDim>
concept w_v_rows_equal_vdim = Rows == VDim;
template <std::size_t Cols, std::size_t KVHeads, std::size_t DV>
concept w_v_cols_equal_kv_heads_times_d_v = Cols == KVHeads* DV;
template <std::size_t Rows, std::size_t Heads, std::size_t DV>
concept w_o_rows_equal_heads_times_d_v = Rows == Heads* DV;
template <std::size_t Cols, std::size_t DModel>
concept w_o_cols_equal_d_model = Cols == DModel;

template <std::size_t Length, std::size_t Heads, std::size_t DK>
concept b_q_length_equals_heads_times_d_k = Length == Heads* DK;
template <std::size_t Length, std::size_t KVHeads, std::size_t DK>
concept b_k_length_equals_kv_heads_times_d_k = Length == KVHeads* DK;
template <std::size_t Length, std::size_t KVHeads, std::size_t DV>
concept b_v_length_equals_kv_heads_times_d_v = Length == KVHeads* DV;
template <std::size_t Length, std::size_t DModel>
concept b_o_length_equals_d_model = Length == DModel;

/// x·W: the width of x is the number of rows of W.
template <std::size_t InputWidth, std::size_t WeightRows>
concept input_width_equals_weight_rows = InputWidth == WeightRows;
/// x·W + b: b has one entry per column of W.
template <std::size_t BiasLength, std::size_t WeightCols>
concept bias_length_equals_weight_cols = BiasLength == WeightCols;
/// A per-head bias (h, d_k) beside a per-head weight (h, d_in, d_k): same h.
template <std::size_t BiasHeads, std::size_t WeightHeads>
concept bias_heads_equal_weight_heads = BiasHeads == WeightHeads;
/// Per-head weights (h, d_in, d_k) applied to split input (B, h, S, d_in): same h.
template <std::size_t WeightHeads, std::size_t InputHeads>
concept weight_heads_equal_input_heads = WeightHeads == InputHeads;

// --- Heads, scores, masks -------------------------------------------------------------

/// split_heads<H>(x) and the modules: at least one head.
template <std::size_t Heads>
concept heads_are_positive = Heads != 0;
/// split_heads<H>(x): H divides the width of x.
template <std::size_t Width, std::size_t Heads>
concept heads_divide_width = Heads != 0 && Width % Heads == 0;
/// Q·Kᵀ: queries and keys have the same per-head width d_k.
template <std::size_t QWidth, std::size_t KWidth>
concept q_and_k_head_widths_agree = QWidth == KWidth;
/// Q·Kᵀ and P·V: the key/value heads divide the query heads.
template <std::size_t QueryHeads, std::size_t KVHeads>
concept kv_heads_divide_query_heads = KVHeads != 0 && QueryHeads % KVHeads == 0;
/// P·V: as many values as keys.
template <std::size_t KeyLength, std::size_t ValueLength>
concept k_and_v_lengths_agree = extents_may_agree<KeyLength, ValueLength>;
/// Operands of one expression have the same batch.
template <std::size_t BatchA, std::size_t BatchB>
concept batches_agree = extents_may_agree<BatchA, BatchB>;
/// A (seq_q, seq_kv) mask has one row per query.
template <std::size_t MaskRows, std::size_t SeqQ>
concept mask_rows_equal_seq_q = extents_may_agree<MaskRows, SeqQ>;
/// A (seq_q, seq_kv) mask has one column per key.
template <std::size_t MaskCols, std::size_t SeqKV>
concept mask_cols_equal_seq_kv = extents_may_agree<MaskCols, SeqKV>;
/// A (batch, seq_kv) key padding mask has one entry per key.
template <std::size_t PaddingLength, std::size_t SeqKV>
concept padding_length_equals_seq_kv = extents_may_agree<PaddingLength, SeqKV>;
/// A (batch, seq_kv) key padding mask has one row per batch item.
template <std::size_t PaddingBatch, std::size_t Batch>
concept padding_batch_equals_batch = extents_may_agree<PaddingBatch, Batch>;

// --- Named axes -----------------------------------------------------------------------
// A relation that accepts one of several layouts is one atomic constraint, bool(a || b): a
// compiler then reports the relation once, instead of explaining every alternative.

/// An activation: (batch, seq, model).
template <class S>
concept axes_are_batch_seq_model = shape_has_axes<S, batch, seq, model>;
/// Split heads: (batch, head, seq, head_dim).
template <class S>
concept axes_are_batch_head_seq_head_dim = shape_has_axes<S, batch, head, seq, head_dim>;
/// Scores or attention weights: (batch, head, seq_q, seq_kv).
template <class S>
concept axes_are_batch_head_seq_seq = shape_has_axes<S, batch, head, seq, seq>;
/// A projection input: (batch, seq, model), or split heads (batch, head, seq, head_dim).
template <class S>
concept axes_are_an_activation_or_split_heads = bool(axes_are_batch_seq_model<S> ||
                                                     axes_are_batch_head_seq_head_dim<S>);
/// A projection weight: stacked (model, model), or per head (head, model, head_dim).
template <class S>
concept axes_are_a_stacked_or_per_head_weight = bool(shape_has_axes<S, model, model> ||
                                                     shape_has_axes<S, head, model, head_dim>);
/// A stacked weight of a module: (model, model).
template <class S>
concept axes_are_a_stacked_weight = shape_has_axes<S, model, model>;
/// A bias: (model) for a stacked weight and for a module, (head, head_dim) for a per-head
/// weight (PerHead).
template <class S, bool PerHead = false>
concept axes_are_a_bias = bool(PerHead ? shape_has_axes<S, head, head_dim>
                                       : shape_has_axes<S, model>);
/// A (seq_q, seq_kv) boolean or additive mask.
template <class S>
concept axes_are_seq_seq = shape_has_axes<S, seq, seq>;
/// A key padding mask: (batch, seq_kv).
template <class S>
concept axes_are_batch_seq = shape_has_axes<S, batch, seq>;

// --- Training -------------------------------------------------------------------------

namespace detail {
template <class A, class B>
struct same_axis_kinds : std::false_type {};
// clang-format off
template <class... A, class... B>
  requires(sizeof...(A) == sizeof...(B))
struct same_axis_kinds<shape<A...>, shape<B...>>
    : std::bool_constant<(same_axis_kind<A, B>::value && ...)> {};
// clang-format on
}  // namespace detail

/// backward(tape, dout): dout = dL/d(out) has the output's axes, in order: (batch, seq, model)
/// after a module's forward, (batch, head, seq, head_dim) after an attention core. The error
/// shows both shapes.
template <class DOutShape, class OutShape>
concept dout_axes_equal_output_axes = detail::same_axis_kinds<DOutShape, OutShape>::value;

/// backward(tape, dout): dout = dL/d(out) has the output's shape, (batch, seq_q, d_model);
/// a run-time batch or length on either side is checked at run time.
template <std::size_t DOutBatch, std::size_t DOutSeq, std::size_t DOutWidth, std::size_t OutBatch,
          std::size_t OutSeq, std::size_t OutWidth>
concept dout_shape_equals_output_shape =
    extents_may_agree<DOutBatch, OutBatch> && extents_may_agree<DOutSeq, OutSeq> &&
    DOutWidth == OutWidth;

/// backward(tape, dout) of an attention core trained as an expression: dout = dL/d(out) has
/// the attention output's shape (batch, heads, seq_q, d_v); run-time extents are checked at
/// run time.
template <std::size_t DOutBatch, std::size_t DOutHeads, std::size_t DOutSeq, std::size_t DOutWidth,
          std::size_t OutBatch, std::size_t OutHeads, std::size_t OutSeq, std::size_t OutWidth>
concept dout_shape_equals_attention_shape =
    extents_may_agree<DOutBatch, OutBatch> && extents_may_agree<DOutHeads, OutHeads> &&
    extents_may_agree<DOutSeq, OutSeq> && extents_may_agree<DOutWidth, OutWidth>;

// --- Values ---------------------------------------------------------------------------

/// scores(q, k, scale): the scale is a number.
template <class S>
concept scale_is_a_number = std::is_arithmetic_v<S> && !std::is_same_v<S, bool>;

/// Every operand of an expression has the same value type.
template <class A, class B>
concept value_types_agree = std::is_same_v<A, B>;
/// argus computes in float or double.
template <class T>
concept value_type_is_float_or_double = std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace argus
