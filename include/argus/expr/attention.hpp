// argus/expr/attention.hpp -- expression layer: the multi-head attention module.
//
//     argus::multi_head_attention<512, 8> mha;          // d_model 512, 8 heads, d_k = d_v = 64
//     auto y = mha.forward(x);                          // an expression; evaluate it (eval/)
//
// The module holds the weights in the paper's x-times-W convention (stacked: W_q is
// (d_model, h·d_k), head i owns columns [i·d_k, (i+1)·d_k)) and builds its forward pass from
// the expressions of expr/, which stay usable alone:
//     out = merge_heads(attend(softmax(mask(scores(split_heads<H>(x_q·W_q + b_q),
//                                                   split_heads<G>(x_k·W_k + b_k)), masks...)),
//                              split_heads<G>(x_v·W_v + b_v)))·W_o + b_o
#pragma once

#include <argus/diagnostics/relations.hpp>
#include <argus/expr/attend.hpp>
#include <argus/expr/mask.hpp>
#include <argus/expr/merge_heads.hpp>
#include <argus/expr/projection.hpp>
#include <argus/expr/scores.hpp>
#include <argus/expr/softmax.hpp>
#include <argus/expr/split_heads.hpp>
#include <argus/tensor/tensor.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace argus {

/// Options of a multi_head_attention module; 0 means "the default", as noted.
struct mha_options {
  std::size_t kv_heads = 0;  ///< key/value heads (grouped-query attention); 0: = heads
  std::size_t d_k = 0;       ///< query/key width per head; 0: d_model / heads
  std::size_t d_v = 0;       ///< value width per head; 0: = d_k
  std::size_t kdim = 0;      ///< width of the key input; 0: = d_model
  std::size_t vdim = 0;      ///< width of the value input; 0: = d_model
  bool bias = true;          ///< the four projections add a bias
};

namespace detail {
template <std::size_t DModel, std::size_t Heads, mha_options O>
struct mha_dims {
  static constexpr std::size_t heads = Heads;
  static constexpr std::size_t kv_heads = O.kv_heads ? O.kv_heads : Heads;
  static constexpr bool d_k_derived = O.d_k == 0;
  static constexpr std::size_t d_k = O.d_k ? O.d_k : (Heads ? DModel / Heads : 0);
  static constexpr std::size_t d_v = O.d_v ? O.d_v : d_k;
  static constexpr std::size_t kdim = O.kdim ? O.kdim : DModel;
  static constexpr std::size_t vdim = O.vdim ? O.vdim : DModel;
};
struct absent_bias {};

/// Copies the elements of v, in row-major order, into t (same number of elements).
template <class T, Shape S, class U, Shape R>
void copy_elements(const tensor_view<const T, S>& v, tensor<U, R>& t) {
  U* out = t.data();
  std::array<std::size_t, S::rank()> c{};
  for (std::size_t n = 0; n < t.size(); ++n) {
    std::size_t off = 0;
    for (std::size_t i = 0; i < S::rank(); ++i) off += c[i] * v.stride(i);
    out[n] = v.data()[off];
    for (std::size_t i = S::rank(); i-- > 0;) {
      if (++c[i] < v.extent(i)) break;
      c[i] = 0;
    }
  }
}
}  // namespace detail

/// Multi-head attention with DModel-wide inputs and Heads heads, value type T.
template <std::size_t DModel, std::size_t Heads, mha_options Options = mha_options{},
          class T = float>
  requires width_is_positive<DModel> && width_is_positive<Heads> &&
           heads_divide_d_model<DModel, Heads, detail::mha_dims<DModel, Heads, Options>::d_k_derived> &&
           kv_heads_divide_heads<Heads, detail::mha_dims<DModel, Heads, Options>::kv_heads> &&
           value_type_is_float_or_double<T>
class multi_head_attention {
  using dims = detail::mha_dims<DModel, Heads, Options>;

 public:
  using value_type = T;
  static constexpr std::size_t d_model = DModel;
  static constexpr std::size_t heads = Heads;
  static constexpr std::size_t kv_heads = dims::kv_heads;
  static constexpr std::size_t d_k = dims::d_k;
  static constexpr std::size_t d_v = dims::d_v;
  static constexpr std::size_t kdim = dims::kdim;
  static constexpr std::size_t vdim = dims::vdim;
  static constexpr bool has_bias = Options.bias;

  template <class S> using bias_tensor = std::conditional_t<has_bias, tensor<T, S>, detail::absent_bias>;

  tensor<T, shape<model<d_model>, model<heads * d_k>>> w_q;         // (D_MODEL,H*D_K)
  tensor<T, shape<model<kdim>, model<kv_heads * d_k>>> w_k;         // (KDIM,G*D_K)
  tensor<T, shape<model<vdim>, model<kv_heads * d_v>>> w_v;         // (VDIM,G*D_V)
  tensor<T, shape<model<heads * d_v>, model<d_model>>> w_o;         // (H*D_V,D_MODEL)
  [[no_unique_address]] bias_tensor<shape<model<heads * d_k>>> b_q;     // (H*D_K)
  [[no_unique_address]] bias_tensor<shape<model<kv_heads * d_k>>> b_k;  // (G*D_K)
  [[no_unique_address]] bias_tensor<shape<model<kv_heads * d_v>>> b_v;  // (G*D_V)
  [[no_unique_address]] bias_tensor<shape<model<d_model>>> b_o;         // (D_MODEL)

  /// Weights zero (and biases zero): fill w_q, w_k, w_v, w_o (and b_*) before use.
  multi_head_attention() = default;

  /// From the user's weights, copied: W_q (d_model, h·d_k), W_k (kdim, kv_heads·d_k),
  /// W_v (vdim, kv_heads·d_v), W_o (h·d_v, d_model), each (model, model) in x-times-W form.
  template <Operand WQ, Operand WK, Operand WV, Operand WO>
    requires axes_are_a_stacked_weight<shape_of<WQ>> && axes_are_a_stacked_weight<shape_of<WK>> &&
             axes_are_a_stacked_weight<shape_of<WV>> && axes_are_a_stacked_weight<shape_of<WO>> &&
             value_types_agree<value_type_of<WQ>, T> && value_types_agree<value_type_of<WK>, T> &&
             value_types_agree<value_type_of<WV>, T> && value_types_agree<value_type_of<WO>, T> &&
             w_q_rows_equal_d_model<axis_t<shape_of<WQ>, 0>::static_extent, d_model> &&
             w_q_cols_equal_heads_times_d_k<axis_t<shape_of<WQ>, 1>::static_extent, heads, d_k> &&
             w_k_rows_equal_kdim<axis_t<shape_of<WK>, 0>::static_extent, kdim> &&
             w_k_cols_equal_kv_heads_times_d_k<axis_t<shape_of<WK>, 1>::static_extent, kv_heads, d_k> &&
             w_v_rows_equal_vdim<axis_t<shape_of<WV>, 0>::static_extent, vdim> &&
             w_v_cols_equal_kv_heads_times_d_v<axis_t<shape_of<WV>, 1>::static_extent, kv_heads, d_v> &&
             w_o_rows_equal_heads_times_d_v<axis_t<shape_of<WO>, 0>::static_extent, heads, d_v> &&
             w_o_cols_equal_d_model<axis_t<shape_of<WO>, 1>::static_extent, d_model>
  multi_head_attention(WQ&& wq, WK&& wk, WV&& wv, WO&& wo) {
    detail::copy_elements(as_expression(wq).view, w_q);
    detail::copy_elements(as_expression(wk).view, w_k);
    detail::copy_elements(as_expression(wv).view, w_v);
    detail::copy_elements(as_expression(wo).view, w_o);
  }

  /// From the user's weights and biases, copied: b_q (h·d_k), b_k (kv_heads·d_k),
  /// b_v (kv_heads·d_v), b_o (d_model).
  template <Operand WQ, Operand WK, Operand WV, Operand WO, Operand BQ, Operand BK, Operand BV,
            Operand BO>
    // The weight relations are repeated, not `std::is_constructible_v<multi_head_attention, WQ,
    // WK, WV, WO>`: an atomic trait would hide which relation a weight breaks.
    requires has_bias &&
             axes_are_a_stacked_weight<shape_of<WQ>> && axes_are_a_stacked_weight<shape_of<WK>> &&
             axes_are_a_stacked_weight<shape_of<WV>> && axes_are_a_stacked_weight<shape_of<WO>> &&
             value_types_agree<value_type_of<WQ>, T> && value_types_agree<value_type_of<WK>, T> &&
             value_types_agree<value_type_of<WV>, T> && value_types_agree<value_type_of<WO>, T> &&
             w_q_rows_equal_d_model<axis_t<shape_of<WQ>, 0>::static_extent, d_model> &&
             w_q_cols_equal_heads_times_d_k<axis_t<shape_of<WQ>, 1>::static_extent, heads, d_k> &&
             w_k_rows_equal_kdim<axis_t<shape_of<WK>, 0>::static_extent, kdim> &&
             w_k_cols_equal_kv_heads_times_d_k<axis_t<shape_of<WK>, 1>::static_extent, kv_heads, d_k> &&
             w_v_rows_equal_vdim<axis_t<shape_of<WV>, 0>::static_extent, vdim> &&
             w_v_cols_equal_kv_heads_times_d_v<axis_t<shape_of<WV>, 1>::static_extent, kv_heads, d_v> &&
             w_o_rows_equal_heads_times_d_v<axis_t<shape_of<WO>, 0>::static_extent, heads, d_v> &&
             w_o_cols_equal_d_model<axis_t<shape_of<WO>, 1>::static_extent, d_model> &&
             value_types_agree<value_type_of<BQ>, T> && value_types_agree<value_type_of<BK>, T> &&
             value_types_agree<value_type_of<BV>, T> && value_types_agree<value_type_of<BO>, T> &&
             b_q_length_equals_heads_times_d_k<shape_of<BQ>::static_size(), heads, d_k> &&
             b_k_length_equals_kv_heads_times_d_k<shape_of<BK>::static_size(), kv_heads, d_k> &&
             b_v_length_equals_kv_heads_times_d_v<shape_of<BV>::static_size(), kv_heads, d_v> &&
             b_o_length_equals_d_model<shape_of<BO>::static_size(), d_model> &&
             axes_are_a_bias<shape_of<BQ>> && axes_are_a_bias<shape_of<BK>> &&
             axes_are_a_bias<shape_of<BV>> && axes_are_a_bias<shape_of<BO>>
  multi_head_attention(WQ&& wq, WK&& wk, WV&& wv, WO&& wo, BQ&& bq, BK&& bk, BV&& bv, BO&& bo)
      : multi_head_attention(wq, wk, wv, wo) {
    detail::copy_elements(as_expression(bq).view, b_q);
    detail::copy_elements(as_expression(bk).view, b_k);
    detail::copy_elements(as_expression(bv).view, b_v);
    detail::copy_elements(as_expression(bo).view, b_o);
  }

  /// Attention of queries x_q to keys x_k and values x_v (batch, seq, width), with masks.
  /// The module must outlive the expression: it holds the weights by reference.
  template <Operand XQ, Operand XK, Operand XV, Mask... Ms>
    requires axes_are_batch_seq_model<shape_of<XQ>> && axes_are_batch_seq_model<shape_of<XK>> &&
             axes_are_batch_seq_model<shape_of<XV>> &&
             value_types_agree<value_type_of<XQ>, T> && value_types_agree<value_type_of<XK>, T> &&
             value_types_agree<value_type_of<XV>, T> &&
             query_width_equals_d_model<axis_t<shape_of<XQ>, 2>::static_extent, d_model> &&
             key_width_equals_kdim<axis_t<shape_of<XK>, 2>::static_extent, kdim> &&
             value_width_equals_vdim<axis_t<shape_of<XV>, 2>::static_extent, vdim> &&
             k_and_v_lengths_agree<axis_t<shape_of<XK>, 1>::static_extent, axis_t<shape_of<XV>, 1>::static_extent> &&
             batches_agree<axis_t<shape_of<XQ>, 0>::static_extent, axis_t<shape_of<XK>, 0>::static_extent> &&
             batches_agree<axis_t<shape_of<XK>, 0>::static_extent, axis_t<shape_of<XV>, 0>::static_extent> &&
             (mask_fits_scores<Ms, axis_t<shape_of<XQ>, 0>::static_extent,
                               axis_t<shape_of<XQ>, 1>::static_extent,
                               axis_t<shape_of<XK>, 1>::static_extent> && ...)
  auto forward(XQ&& x_q, XK&& x_k, XV&& x_v, const Ms&... masks) const {
    check_inputs(as_expression(x_q).shape(), as_expression(x_k).shape(), as_expression(x_v).shape());
    auto q = split_heads<heads>(projected(std::forward<XQ>(x_q), w_q, b_q));
    auto k = split_heads<kv_heads>(projected(std::forward<XK>(x_k), w_k, b_k));
    auto v = split_heads<kv_heads>(projected(std::forward<XV>(x_v), w_v, b_v));
    auto s = [&] {
      if constexpr (sizeof...(Ms) == 0) return scores(q, k);
      else return mask(scores(q, k), masks...);
    }();
    return projected(merge_heads(attend(softmax(s), v)), w_o, b_o);
  }

  /// Self-attention: forward(x, x, x, masks...).
  template <Operand X, Mask... Ms>
  auto forward(X&& x, const Ms&... masks) const -> decltype(this->forward(x, x, x, masks...)) {
    return forward(x, x, x, masks...);
  }

 private:
  template <class SQ, class SK, class SV>
  static void check_inputs(const SQ& q, const SK& k, const SV& v) {
    constexpr const char* op = "argus::multi_head_attention::forward";
    detail::check_extents_agree(op, "the batch of x_q", q.extent(0), "the batch of x_k", k.extent(0));
    detail::check_extents_agree(op, "the batch of x_k", k.extent(0), "the batch of x_v", v.extent(0));
    detail::check_extents_agree(op, "the length of x_k (seq_kv)", k.extent(1),
                                "the length of x_v", v.extent(1));
  }

  template <class X, class W, class B>
  static auto projected(X&& x, const W& w, const B& b) {
    if constexpr (has_bias) return project(std::forward<X>(x), w, b);
    else return project(std::forward<X>(x), w);
  }
};

namespace detail {
template <class E> struct find_softmax { static constexpr bool found = false; };
template <class E> struct find_softmax<softmax_node<E>> {
  static constexpr bool found = true;
  static const softmax_node<E>& get(const softmax_node<E>& n) { return n; }
};
template <class P, class V> struct find_softmax<attend_node<P, V>> : find_softmax<P> {
  static decltype(auto) get(const attend_node<P, V>& n) { return find_softmax<P>::get(n.weights); }
};
template <class X> struct find_softmax<merge_heads_node<X>> : find_softmax<X> {
  static decltype(auto) get(const merge_heads_node<X>& n) { return find_softmax<X>::get(n.x); }
};
template <class X, class W, class B> struct find_softmax<projection<X, W, B>> : find_softmax<X> {
  static decltype(auto) get(const projection<X, W, B>& n) { return find_softmax<X>::get(n.x); }
};
}  // namespace detail

/// True when attention_weights(e) exists: e ends in attend(softmax(...), v).
template <class E>
concept expression_has_attention_weights = detail::find_softmax<E>::found;

/// The softmax sub-expression (batch, head, seq_q, seq_kv) of an attention expression:
/// evaluate it to export the per-head attention weights.
template <Expression E>
  requires expression_has_attention_weights<E>
constexpr auto attention_weights(const E& e) {
  return detail::find_softmax<E>::get(e);
}

}  // namespace argus
