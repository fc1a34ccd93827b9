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
#include <tuple>
#include <type_traits>
#include <utility>

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

/// The number of arguments before the first mask: forward's inputs.
template <class... Args>
constexpr std::size_t leading_inputs() {
  std::size_t n = 0;
  for (bool is_mask : {Mask<std::remove_cvref_t<Args>>..., true}) {
    if (is_mask) break;
    ++n;
  }
  return n;
}
/// 0, 1, ... for each argument from the first mask on.
template <class... Args>
using mask_positions = std::make_index_sequence<sizeof...(Args) - leading_inputs<Args...>()>;

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
/// Whether Args is one argument of class C, or of a class derived from C: what C's copy and
/// move constructors take, which a catch-all constructor of C must leave to them.
template <class C, class... Args>
inline constexpr bool copies_of = false;
template <class C, class Arg>
inline constexpr bool copies_of<C, Arg> = std::is_base_of_v<C, std::remove_cvref_t<Arg>>;
}  // namespace detail

template <class Module>
class prepacked_attention;

/// Multi-head attention with DModel-wide inputs and Heads heads, value type T.
// clang-format off
template <std::size_t DModel, std::size_t Heads, mha_options Options = mha_options{},
          class T = float>
requires width_is_positive<DModel> && width_is_positive<Heads> &&
    model_width_is_static<DModel> &&
    heads_divide_d_model<DModel, Heads, detail::mha_dims<DModel, Heads, Options>::d_k_derived> &&
    kv_heads_divide_heads<Heads, detail::mha_dims<DModel, Heads, Options>::kv_heads> &&
    model_width_is_static<detail::mha_dims<DModel, Heads, Options>::kdim> &&
    model_width_is_static<detail::mha_dims<DModel, Heads, Options>::vdim> &&
    model_width_is_static<detail::mha_dims<DModel, Heads, Options>::d_k> &&
    model_width_is_static<detail::mha_dims<DModel, Heads, Options>::d_v> &&
    module_widths_fit_in_a_tensor<DModel, detail::mha_dims<DModel, Heads, Options>::kdim,
                                  detail::mha_dims<DModel, Heads, Options>::vdim, Heads,
                                  detail::mha_dims<DModel, Heads, Options>::kv_heads,
                                  detail::mha_dims<DModel, Heads, Options>::d_k,
                                  detail::mha_dims<DModel, Heads, Options>::d_v> &&
    value_type_is_float_or_double<T>
class multi_head_attention {
  // clang-format on
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

  template <class S>
  using bias_tensor = std::conditional_t<has_bias, tensor<T, S>, detail::absent_bias>;

  tensor<T, shape<model<d_model>, model<heads * d_k>>> w_q;             // (D_MODEL,H*D_K)
  tensor<T, shape<model<kdim>, model<kv_heads * d_k>>> w_k;             // (KDIM,G*D_K)
  tensor<T, shape<model<vdim>, model<kv_heads * d_v>>> w_v;             // (VDIM,G*D_V)
  tensor<T, shape<model<heads * d_v>, model<d_model>>> w_o;             // (H*D_V,D_MODEL)
  [[no_unique_address]] bias_tensor<shape<model<heads * d_k>>> b_q;     // (H*D_K)
  [[no_unique_address]] bias_tensor<shape<model<kv_heads * d_k>>> b_k;  // (G*D_K)
  [[no_unique_address]] bias_tensor<shape<model<kv_heads * d_v>>> b_v;  // (G*D_V)
  [[no_unique_address]] bias_tensor<shape<model<d_model>>> b_o;         // (D_MODEL)

  /// Weights zero (and biases zero): fill w_q, w_k, w_v, w_o (and b_*) before use.
  multi_head_attention() = default;

  /// From the user's weights, copied: W_q (d_model, h·d_k), W_k (kdim, kv_heads·d_k),
  /// W_v (vdim, kv_heads·d_v), W_o (h·d_v, d_model), each (model, model) in x-times-W form.
  /// A weight of the wrong shape is a compile error naming the relation it breaks.
  template <class WQ, class WK, class WV, class WO>
  multi_head_attention(WQ&& wq, WK&& wk, WV&& wv, WO&& wo) {
    if constexpr (weights_accepted<true, WQ, WK, WV, WO>()) {
      detail::copy_elements(as_expression(wq).view, w_q);
      detail::copy_elements(as_expression(wk).view, w_k);
      detail::copy_elements(as_expression(wv).view, w_v);
      detail::copy_elements(as_expression(wo).view, w_o);
    }
  }

  /// From the user's weights and biases, copied: b_q (h·d_k), b_k (kv_heads·d_k),
  /// b_v (kv_heads·d_v), b_o (d_model).
  template <class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
  multi_head_attention(WQ&& wq, WK&& wk, WV&& wv, WO&& wo, BQ&& bq, BK&& bk, BV&& bv, BO&& bo) {
    if constexpr (!module_has_biases<has_bias>) {
      static_assert(module_has_biases<has_bias>,
                    "module_has_biases: this multi_head_attention has mha_options{.bias = false}; "
                    "construct it from the four weights alone");
    } else if constexpr (weights_accepted<true, WQ, WK, WV, WO>() &&
                         biases_accepted<true, BQ, BK, BV, BO>()) {
      detail::copy_elements(as_expression(wq).view, w_q);
      detail::copy_elements(as_expression(wk).view, w_k);
      detail::copy_elements(as_expression(wv).view, w_v);
      detail::copy_elements(as_expression(wo).view, w_o);
      detail::copy_elements(as_expression(bq).view, b_q);
      detail::copy_elements(as_expression(bk).view, b_k);
      detail::copy_elements(as_expression(bv).view, b_v);
      detail::copy_elements(as_expression(bo).view, b_o);
    }
  }

  /// Any other argument list (three weights, a weight and a bias short, another module):
  /// reported (module_takes_four_weights_or_eight_tensors), once. Copies and moves are left to
  /// the copy and move constructors; explicit for one argument, so that nothing converts to a
  /// module implicitly.
  // NOLINTBEGIN(bugprone-forwarding-reference-overload)
  template <class... Args>
    requires(!module_takes_four_weights_or_eight_tensors<sizeof...(Args)> &&
             !detail::copies_of<multi_head_attention, Args...>)
  explicit(sizeof...(Args) == 1) multi_head_attention(Args&&...) {
    // NOLINTEND(bugprone-forwarding-reference-overload)
    static_assert(module_takes_four_weights_or_eight_tensors<sizeof...(Args)>,
                  "module_takes_four_weights_or_eight_tensors: multi_head_attention(w_q, w_k, w_v, "
                  "w_o) copies the four weights, and with mha_options{.bias = true} "
                  "multi_head_attention(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o) the four biases "
                  "too; multi_head_attention() starts from zeros");
  }

  /// Attention of queries x_q to keys x_k and values x_v, each (batch, seq, width), with
  /// masks: forward(x_q, x_k, x_v, masks...); self-attention: forward(x, masks...), which is
  /// forward(x, x, x, masks...). Every relation of the inputs and masks is checked here and the
  /// first broken one is the compile error. The module must outlive the expression: it holds
  /// the weights by reference.
  template <class... Args>
  auto forward(Args&&... args) const& {
    if constexpr (!forward_accepted<true, Args...>(detail::mask_positions<Args...>{}))
      return detail::rejected{};
    else
      return forward_with(*this, std::forward<Args>(args)...);
  }
  /// forward on a temporary module (`multi_head_attention<...>{}.forward(x)`): the expression
  /// would hold the weights of a module gone at the end of the statement. Reported
  /// (module_is_not_a_temporary), once.
  template <class... Args>
  detail::rejected forward(Args&&...) const&& {
    static_assert(module_is_not_a_temporary<const multi_head_attention&&>,
                  "module_is_not_a_temporary: m.forward(...) gives an expression that holds m's "
                  "weights by reference; name the module first (a temporary is gone at the end "
                  "of the statement)");
    return {};
  }

 private:
  template <class Module>
  friend class prepacked_attention;  // forward with the weights packed (eval/prepacked.hpp)

  /// forward's expression over the weights and biases of `wts` (this module's, or their packed
  /// copies), for arguments forward_accepted has passed: one input or three, then the masks.
  template <class Weights, class... Args>
  static auto forward_with(const Weights& wts, Args&&... args) {
    constexpr std::size_t inputs = detail::leading_inputs<Args...>();
    auto refs = std::forward_as_tuple(std::forward<Args>(args)...);
    using masks = std::make_index_sequence<sizeof...(Args) - inputs>;
    if constexpr (inputs == 1)
      return forward_inputs<0, 0, 0, 1>(wts, refs, masks{});
    else
      return forward_inputs<0, 1, 2, 3>(wts, refs, masks{});
  }

  template <bool Report, class WQ, class WK, class WV, class WO>
  static constexpr bool weights_accepted() {
    if constexpr (!detail::operands_accepted<Report, WQ, WK, WV, WO>()) {
      return false;
    } else if constexpr (!axes_are_a_stacked_weight<shape_of<WQ>>) {
      if constexpr (Report)
        static_assert(axes_are_a_stacked_weight<shape_of<WQ>>,
                      "axes_are_a_stacked_weight: W_q of multi_head_attention is (model, model)");
      return false;
    } else if constexpr (!axes_are_a_stacked_weight<shape_of<WK>>) {
      if constexpr (Report)
        static_assert(axes_are_a_stacked_weight<shape_of<WK>>,
                      "axes_are_a_stacked_weight: W_k of multi_head_attention is (model, model)");
      return false;
    } else if constexpr (!axes_are_a_stacked_weight<shape_of<WV>>) {
      if constexpr (Report)
        static_assert(axes_are_a_stacked_weight<shape_of<WV>>,
                      "axes_are_a_stacked_weight: W_v of multi_head_attention is (model, model)");
      return false;
    } else if constexpr (!axes_are_a_stacked_weight<shape_of<WO>>) {
      if constexpr (Report)
        static_assert(axes_are_a_stacked_weight<shape_of<WO>>,
                      "axes_are_a_stacked_weight: W_o of multi_head_attention is (model, model)");
      return false;
    } else if constexpr (!value_types_agree<value_type_of<WQ>, T> ||
                         !value_types_agree<value_type_of<WK>, T> ||
                         !value_types_agree<value_type_of<WV>, T> ||
                         !value_types_agree<value_type_of<WO>, T>) {
      if constexpr (Report)
        static_assert(
            value_types_agree<value_type_of<WQ>, T> && value_types_agree<value_type_of<WK>, T> &&
                value_types_agree<value_type_of<WV>, T> && value_types_agree<value_type_of<WO>, T>,
            "value_types_agree: the weights have the module's value type T");
      return false;
    } else if constexpr (!w_q_rows_equal_d_model<axis_of<WQ, 0>::static_extent, d_model>) {
      if constexpr (Report)
        static_assert(w_q_rows_equal_d_model<axis_of<WQ, 0>::static_extent, d_model>,
                      "w_q_rows_equal_d_model: W_q is (d_model, heads*d_k)");
      return false;
    } else if constexpr (!w_q_cols_equal_heads_times_d_k<axis_of<WQ, 1>::static_extent, heads,
                                                         d_k>) {
      if constexpr (Report)
        static_assert(w_q_cols_equal_heads_times_d_k<axis_of<WQ, 1>::static_extent, heads, d_k>,
                      "w_q_cols_equal_heads_times_d_k: W_q is (d_model, heads*d_k)");
      return false;
    } else if constexpr (!w_k_rows_equal_kdim<axis_of<WK, 0>::static_extent, kdim>) {
      if constexpr (Report)
        static_assert(w_k_rows_equal_kdim<axis_of<WK, 0>::static_extent, kdim>,
                      "w_k_rows_equal_kdim: W_k is (kdim, kv_heads*d_k)");
      return false;
    } else if constexpr (!w_k_cols_equal_kv_heads_times_d_k<axis_of<WK, 1>::static_extent, kv_heads,
                                                            d_k>) {
      if constexpr (Report)
        static_assert(
            w_k_cols_equal_kv_heads_times_d_k<axis_of<WK, 1>::static_extent, kv_heads, d_k>,
            "w_k_cols_equal_kv_heads_times_d_k: W_k is (kdim, kv_heads*d_k)");
      return false;
    } else if constexpr (!w_v_rows_equal_vdim<axis_of<WV, 0>::static_extent, vdim>) {
      if constexpr (Report)
        static_assert(w_v_rows_equal_vdim<axis_of<WV, 0>::static_extent, vdim>,
                      "w_v_rows_equal_vdim: W_v is (vdim, kv_heads*d_v)");
      return false;
    } else if constexpr (!w_v_cols_equal_kv_heads_times_d_v<axis_of<WV, 1>::static_extent, kv_heads,
                                                            d_v>) {
      if constexpr (Report)
        static_assert(
            w_v_cols_equal_kv_heads_times_d_v<axis_of<WV, 1>::static_extent, kv_heads, d_v>,
            "w_v_cols_equal_kv_heads_times_d_v: W_v is (vdim, kv_heads*d_v)");
      return false;
    } else if constexpr (!w_o_rows_equal_heads_times_d_v<axis_of<WO, 0>::static_extent, heads,
                                                         d_v>) {
      if constexpr (Report)
        static_assert(w_o_rows_equal_heads_times_d_v<axis_of<WO, 0>::static_extent, heads, d_v>,
                      "w_o_rows_equal_heads_times_d_v: W_o is (heads*d_v, d_model)");
      return false;
    } else if constexpr (!w_o_cols_equal_d_model<axis_of<WO, 1>::static_extent, d_model>) {
      if constexpr (Report)
        static_assert(w_o_cols_equal_d_model<axis_of<WO, 1>::static_extent, d_model>,
                      "w_o_cols_equal_d_model: W_o is (heads*d_v, d_model)");
      return false;
    } else {
      return true;
    }
  }

  template <bool Report, class BQ, class BK, class BV, class BO>
  static constexpr bool biases_accepted() {
    if constexpr (!detail::operands_accepted<Report, BQ, BK, BV, BO>()) {
      return false;
    } else if constexpr (!axes_are_a_bias<shape_of<BQ>> || !axes_are_a_bias<shape_of<BK>> ||
                         !axes_are_a_bias<shape_of<BV>> || !axes_are_a_bias<shape_of<BO>>) {
      if constexpr (Report)
        static_assert(axes_are_a_bias<shape_of<BQ>> && axes_are_a_bias<shape_of<BK>> &&
                          axes_are_a_bias<shape_of<BV>> && axes_are_a_bias<shape_of<BO>>,
                      "axes_are_a_bias: the biases of multi_head_attention are (model)");
      return false;
    } else if constexpr (!value_types_agree<value_type_of<BQ>, T> ||
                         !value_types_agree<value_type_of<BK>, T> ||
                         !value_types_agree<value_type_of<BV>, T> ||
                         !value_types_agree<value_type_of<BO>, T>) {
      if constexpr (Report)
        static_assert(
            value_types_agree<value_type_of<BQ>, T> && value_types_agree<value_type_of<BK>, T> &&
                value_types_agree<value_type_of<BV>, T> && value_types_agree<value_type_of<BO>, T>,
            "value_types_agree: the biases have the module's value type T");
      return false;
    } else if constexpr (!b_q_length_equals_heads_times_d_k<shape_of<BQ>::static_size(), heads,
                                                            d_k>) {
      if constexpr (Report)
        static_assert(b_q_length_equals_heads_times_d_k<shape_of<BQ>::static_size(), heads, d_k>,
                      "b_q_length_equals_heads_times_d_k: b_q has heads*d_k entries");
      return false;
    } else if constexpr (!b_k_length_equals_kv_heads_times_d_k<shape_of<BK>::static_size(),
                                                               kv_heads, d_k>) {
      if constexpr (Report)
        static_assert(
            b_k_length_equals_kv_heads_times_d_k<shape_of<BK>::static_size(), kv_heads, d_k>,
            "b_k_length_equals_kv_heads_times_d_k: b_k has kv_heads*d_k entries");
      return false;
    } else if constexpr (!b_v_length_equals_kv_heads_times_d_v<shape_of<BV>::static_size(),
                                                               kv_heads, d_v>) {
      if constexpr (Report)
        static_assert(
            b_v_length_equals_kv_heads_times_d_v<shape_of<BV>::static_size(), kv_heads, d_v>,
            "b_v_length_equals_kv_heads_times_d_v: b_v has kv_heads*d_v entries");
      return false;
    } else if constexpr (!b_o_length_equals_d_model<shape_of<BO>::static_size(), d_model>) {
      if constexpr (Report)
        static_assert(b_o_length_equals_d_model<shape_of<BO>::static_size(), d_model>,
                      "b_o_length_equals_d_model: b_o has d_model entries");
      return false;
    } else {
      return true;
    }
  }

  /// forward's rules: one or three inputs before the masks, the inputs' rules, the masks'.
  template <bool Report, class... Args, std::size_t... I>
  static constexpr bool forward_accepted(std::index_sequence<I...>) {
    constexpr std::size_t inputs = detail::leading_inputs<Args...>();
    using types = std::tuple<Args...>;
    if constexpr (detail::any_rejected<Args...>) {
      return false;  // reported where it was made
    } else if constexpr (!forward_takes_one_or_three_inputs<inputs>) {
      if constexpr (Report)
        static_assert(forward_takes_one_or_three_inputs<inputs>,
                      "forward_takes_one_or_three_inputs: multi_head_attention::forward takes "
                      "(x, masks...) or (x_q, x_k, x_v, masks...)");
      return false;
    } else {
      constexpr std::size_t k = inputs == 1 ? 0 : 1, v = inputs == 1 ? 0 : 2;
      using XQ = std::tuple_element_t<0, types>;
      using XK = std::tuple_element_t<k, types>;
      using XV = std::tuple_element_t<v, types>;
      if constexpr (!inputs_accepted<Report, XQ, XK, XV>()) {
        return false;
      } else {
        // I: the masks' positions after the inputs. A fold here, not a helper, keeps the
        // instantiation stack of a mask's error short.
        return (detail::mask_accepted<Report, std::tuple_element_t<inputs + I, types>,
                                      axis_of<XQ, 0>::static_extent, axis_of<XQ, 1>::static_extent,
                                      axis_of<XK, 1>::static_extent, T>() &&
                ...);
      }
    }
  }

  /// forward on the arguments at positions Q, K, V of refs, with the masks from position M on,
  /// and the weights and biases of `wts` (this module's, or their packed copies).
  template <std::size_t Q, std::size_t K, std::size_t V, std::size_t M, class Weights, class Refs,
            std::size_t... I>
  static auto forward_inputs(const Weights& wts, Refs& refs, std::index_sequence<I...>) {
    using XQ = std::tuple_element_t<Q, Refs>;
    using XK = std::tuple_element_t<K, Refs>;
    using XV = std::tuple_element_t<V, Refs>;
    auto&& x_q = std::get<Q>(refs);
    auto&& x_k = std::get<K>(refs);
    auto&& x_v = std::get<V>(refs);
    check_inputs(as_expression(x_q).shape(), as_expression(x_k).shape(),
                 as_expression(x_v).shape());
    auto q = split_heads<heads>(projected(std::forward<XQ>(x_q), wts.w_q, wts.b_q));
    auto k = split_heads<kv_heads>(projected(std::forward<XK>(x_k), wts.w_k, wts.b_k));
    auto v = split_heads<kv_heads>(projected(std::forward<XV>(x_v), wts.w_v, wts.b_v));
    auto s = [&] {
      if constexpr (sizeof...(I) == 0)
        return scores(q, k);
      else
        return mask(scores(q, k), std::get<M + I>(refs)...);
    }();
    return projected(merge_heads(attend(softmax(s), v)), wts.w_o, wts.b_o);
  }

  template <bool Report, class XQ, class XK, class XV>
  static constexpr bool inputs_accepted() {
    if constexpr (!detail::operands_accepted<Report, XQ, XK, XV>()) {
      return false;
    } else if constexpr (!axes_are_batch_seq_model<shape_of<XQ>>) {
      if constexpr (Report)
        static_assert(axes_are_batch_seq_model<shape_of<XQ>>,
                      "axes_are_batch_seq_model: forward's x_q (or x) is (batch, seq, model)");
      return false;
    } else if constexpr (!axes_are_batch_seq_model<shape_of<XK>>) {
      if constexpr (Report)
        static_assert(axes_are_batch_seq_model<shape_of<XK>>,
                      "axes_are_batch_seq_model: forward's x_k is (batch, seq, model)");
      return false;
    } else if constexpr (!axes_are_batch_seq_model<shape_of<XV>>) {
      if constexpr (Report)
        static_assert(axes_are_batch_seq_model<shape_of<XV>>,
                      "axes_are_batch_seq_model: forward's x_v is (batch, seq, model)");
      return false;
    } else if constexpr (!model_width_is_static<axis_of<XQ, 2>::static_extent> ||
                         !model_width_is_static<axis_of<XK, 2>::static_extent> ||
                         !model_width_is_static<axis_of<XV, 2>::static_extent>) {
      if constexpr (Report)
        static_assert(model_width_is_static<axis_of<XQ, 2>::static_extent> &&
                          model_width_is_static<axis_of<XK, 2>::static_extent> &&
                          model_width_is_static<axis_of<XV, 2>::static_extent>,
                      "model_width_is_static: forward's inputs have a compile-time model width; "
                      "only batch and seq may be argus::dyn");
      return false;
    } else if constexpr (!value_types_agree<value_type_of<XQ>, T> ||
                         !value_types_agree<value_type_of<XK>, T> ||
                         !value_types_agree<value_type_of<XV>, T>) {
      if constexpr (Report)
        static_assert(value_types_agree<value_type_of<XQ>, T> &&
                          value_types_agree<value_type_of<XK>, T> &&
                          value_types_agree<value_type_of<XV>, T>,
                      "value_types_agree: forward's inputs have the module's value type T");
      return false;
    } else if constexpr (!query_width_equals_d_model<axis_of<XQ, 2>::static_extent, d_model>) {
      if constexpr (Report)
        static_assert(query_width_equals_d_model<axis_of<XQ, 2>::static_extent, d_model>,
                      "query_width_equals_d_model: forward's x_q (or x) is d_model wide");
      return false;
    } else if constexpr (!key_width_equals_kdim<axis_of<XK, 2>::static_extent, kdim>) {
      if constexpr (Report)
        static_assert(key_width_equals_kdim<axis_of<XK, 2>::static_extent, kdim>,
                      "key_width_equals_kdim: forward's x_k is kdim wide");
      return false;
    } else if constexpr (!value_width_equals_vdim<axis_of<XV, 2>::static_extent, vdim>) {
      if constexpr (Report)
        static_assert(value_width_equals_vdim<axis_of<XV, 2>::static_extent, vdim>,
                      "value_width_equals_vdim: forward's x_v is vdim wide");
      return false;
    } else if constexpr (!k_and_v_lengths_agree<axis_of<XK, 1>::static_extent,
                                                axis_of<XV, 1>::static_extent>) {
      if constexpr (Report)
        static_assert(
            k_and_v_lengths_agree<axis_of<XK, 1>::static_extent, axis_of<XV, 1>::static_extent>,
            "k_and_v_lengths_agree: forward's x_k and x_v have one length");
      return false;
    } else if constexpr (!batches_agree<axis_of<XQ, 0>::static_extent,
                                        axis_of<XK, 0>::static_extent> ||
                         !batches_agree<axis_of<XK, 0>::static_extent,
                                        axis_of<XV, 0>::static_extent>) {
      if constexpr (Report)
        static_assert(
            batches_agree<axis_of<XQ, 0>::static_extent, axis_of<XK, 0>::static_extent> &&
                batches_agree<axis_of<XK, 0>::static_extent, axis_of<XV, 0>::static_extent>,
            "batches_agree: forward's x_q, x_k and x_v have one batch");
      return false;
    } else {
      return true;
    }
  }

  template <class SQ, class SK, class SV>
  static void check_inputs(const SQ& q, const SK& k, const SV& v) {
    constexpr const char* op = "argus::multi_head_attention::forward";
    detail::check_extents_agree(op, "the batch of x_q", q.extent(0), "the batch of x_k",
                                k.extent(0));
    detail::check_extents_agree(op, "the batch of x_k", k.extent(0), "the batch of x_v",
                                v.extent(0));
    detail::check_extents_agree(op, "the length of x_k (seq_kv)", k.extent(1), "the length of x_v",
                                v.extent(1));
  }

  template <class X, class W, class B>
  static auto projected(X&& x, const W& w, const B& b) {
    if constexpr (has_bias)
      return project(std::forward<X>(x), w, b);
    else
      return project(std::forward<X>(x), w);
  }

 public:
  /// The rules of the constructors and of forward, without the report (for in-process tests):
  /// true when the call compiles.
  template <class WQ, class WK, class WV, class WO>
  static constexpr bool accepts_weights = weights_accepted<false, WQ, WK, WV, WO>();
  template <class BQ, class BK, class BV, class BO>
  static constexpr bool accepts_biases = (has_bias && biases_accepted<false, BQ, BK, BV, BO>());
  template <class... Args>
  static constexpr bool accepts_forward =
      forward_accepted<false, Args...>(detail::mask_positions<Args...>{});
};

namespace detail {
template <class M>
struct is_multi_head_attention : std::false_type {};
template <std::size_t D, std::size_t H, mha_options O, class T>
struct is_multi_head_attention<multi_head_attention<D, H, O, T>> : std::true_type {};
}  // namespace detail

/// A multi_head_attention<...> specialisation.
template <class M>
concept MultiHeadAttentionModule = detail::is_multi_head_attention<M>::value;

namespace detail {
template <class E>
struct find_softmax {
  static constexpr bool found = false;
};
template <class E>
struct find_softmax<softmax_node<E>> {
  static constexpr bool found = true;
  static const softmax_node<E>& get(const softmax_node<E>& n) { return n; }
};
template <class P, class V>
struct find_softmax<attend_node<P, V>> : find_softmax<P> {
  static decltype(auto) get(const attend_node<P, V>& n) { return find_softmax<P>::get(n.weights); }
};
template <class X>
struct find_softmax<merge_heads_node<X>> : find_softmax<X> {
  static decltype(auto) get(const merge_heads_node<X>& n) { return find_softmax<X>::get(n.x); }
};
template <class X, class W, class B>
struct find_softmax<projection<X, W, B>> : find_softmax<X> {
  static decltype(auto) get(const projection<X, W, B>& n) { return find_softmax<X>::get(n.x); }
};
}  // namespace detail

/// True when attention_weights(e) exists: e ends in attend(softmax(...), v).
template <class E>
concept expression_has_attention_weights = detail::find_softmax<E>::found;

/// The softmax sub-expression (batch, head, seq_q, seq_kv) of an attention expression:
/// evaluate it to export the per-head attention weights. Anything else does not compile, the
/// error naming the rule (argument_is_an_expression, expression_has_attention_weights); a
/// rejected expression (its error already reported) has no weights to give, silently.
template <class E>
constexpr auto attention_weights(const E& e) {
  if constexpr (detail::any_rejected<E>) {
    (void)e;
    return detail::rejected{};
  } else if constexpr (!argument_is_an_expression<E>) {
    static_assert(argument_is_an_expression<E>,
                  "argument_is_an_expression: argus::attention_weights(y) finds the softmax of "
                  "an attention expression (forward, attend, ...), not of a tensor");
    return detail::rejected{};
  } else if constexpr (!expression_has_attention_weights<E>) {
    static_assert(expression_has_attention_weights<E>,
                  "expression_has_attention_weights: argus::attention_weights(y) needs an "
                  "expression that ends in attend(softmax(...), v), such as a module's forward");
    return detail::rejected{};
  } else {
    return detail::find_softmax<E>::get(e);
  }
}

}  // namespace argus
