// Compile-only checks of the module multi_head_attention (STYLE.md section 6): which
// configurations exist, the shapes of the weights it holds, which user weights and biases its
// constructors take, which inputs forward takes, and the shape of what forward builds.
//
// A rejected configuration is tested through a concept (the class template's requires-clause);
// the constructors and forward report a misuse with a static_assert, which a requires-expression
// cannot observe, so their rejections are read from the module's accepts_weights, accepts_biases
// and accepts_forward (the same rules, in the same order, without the report).
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace static_module_test {

using argus::batch;
using argus::dyn;
using argus::head;
using argus::head_dim;
using argus::mha_options;
using argus::model;
using argus::seq;
using argus::shape;
using argus::tensor;

// ---- Configurations ----------------------------------------------------------------------

template <std::size_t DModel, std::size_t Heads, mha_options Options = mha_options{},
          class T = float>
concept module_exists = requires {
  typename argus::multi_head_attention<DModel, Heads, Options, T>;
};

static_assert(module_exists<512, 8>);
static_assert(module_exists<512, 1>);
static_assert(!module_exists<512, 7>);                         // 512 % 7 != 0
static_assert(!module_exists<512, 0>);                         // no heads
static_assert(!module_exists<0, 8>);                           // no width
static_assert(module_exists<512, 7, mha_options{.d_k = 64}>);  // d_k given: 7 need not divide 512
static_assert(module_exists<512, 8, mha_options{.kv_heads = 2}>);   // grouped-query attention
static_assert(module_exists<512, 8, mha_options{.kv_heads = 1}>);   // multi-query attention
static_assert(!module_exists<512, 8, mha_options{.kv_heads = 3}>);  // 8 % 3 != 0
static_assert(module_exists<512, 8, mha_options{}, double>);
static_assert(!module_exists<512, 8, mha_options{}, int>);  // float or double
static_assert(!module_exists<512, 8, mha_options{}, long double>);

// ---- Dimensions and weights --------------------------------------------------------------

using mha = argus::multi_head_attention<64, 8>;
using gqa = argus::multi_head_attention<64, 8, mha_options{.kv_heads = 2, .kdim = 32, .vdim = 48}>;
using no_bias_mha = argus::multi_head_attention<64, 8, mha_options{.bias = false}>;
using wide = argus::multi_head_attention<64, 4, mha_options{.d_k = 32, .d_v = 24}>;

static_assert(mha::d_model == 64 && mha::heads == 8 && mha::kv_heads == 8);
static_assert(mha::d_k == 8 && mha::d_v == 8 && mha::kdim == 64 && mha::vdim == 64);
static_assert(mha::has_bias && !no_bias_mha::has_bias);
static_assert(std::is_same_v<mha::value_type, float>);
static_assert(gqa::kv_heads == 2 && gqa::kdim == 32 && gqa::vdim == 48 && gqa::d_k == 8);
static_assert(wide::d_k == 32 && wide::d_v == 24);

// The weights, stacked, in x·W form.
static_assert(std::is_same_v<decltype(gqa::w_q)::shape_type,
                             shape<model<64>, model<64>>>);  // (d_model, h·d_k)
static_assert(
    std::is_same_v<decltype(gqa::w_k)::shape_type, shape<model<32>, model<16>>>);  // (kdim, g·d_k)
static_assert(
    std::is_same_v<decltype(gqa::w_v)::shape_type, shape<model<48>, model<16>>>);  // (vdim, g·d_v)
static_assert(std::is_same_v<decltype(gqa::w_o)::shape_type,
                             shape<model<64>, model<64>>>);  // (h·d_v, d_model)
static_assert(std::is_same_v<decltype(gqa::b_k)::shape_type, shape<model<16>>>);
static_assert(
    std::is_same_v<decltype(wide::w_q)::shape_type, shape<model<64>, model<128>>>);  // 4 · 32
static_assert(
    std::is_same_v<decltype(wide::w_o)::shape_type, shape<model<96>, model<64>>>);  // 4 · 24
static_assert(std::is_default_constructible_v<mha>);

// ---- Constructors from the user's weights ------------------------------------------------

template <std::size_t Rows, std::size_t Cols, class T = float>
using weight = tensor<T, shape<model<Rows>, model<Cols>>>;
template <std::size_t Length, class T = float>
using bias = tensor<T, shape<model<Length>>>;
// gqa takes W_q (64, 64), W_k (32, 16), W_v (48, 16), W_o (64, 64); b_q 64, b_k 16, b_v 16, b_o 64.
template <class WQ, class WK, class WV, class WO>
inline constexpr bool takes_weights =
    gqa::accepts_weights<const WQ&, const WK&, const WV&, const WO&>;
template <class BQ, class BK, class BV, class BO>
inline constexpr bool takes_biases =
    gqa::accepts_biases<const BQ&, const BK&, const BV&, const BO&>;

static_assert(takes_weights<weight<64, 64>, weight<32, 16>, weight<48, 16>, weight<64, 64>>);
static_assert(!takes_weights<weight<32, 64>, weight<32, 16>, weight<48, 16>,
                             weight<64, 64>>);  // W_q rows 32 != d_model 64
static_assert(!takes_weights<weight<64, 48>, weight<32, 16>, weight<48, 16>,
                             weight<64, 64>>);  // W_q cols 48 != 8 · 8
static_assert(!takes_weights<weight<64, 64>, weight<64, 16>, weight<48, 16>,
                             weight<64, 64>>);  // W_k rows 64 != kdim 32
static_assert(!takes_weights<weight<64, 64>, weight<32, 64>, weight<48, 16>,
                             weight<64, 64>>);  // W_k cols 64 != 2 · 8
static_assert(!takes_weights<weight<64, 64>, weight<32, 16>, weight<64, 16>,
                             weight<64, 64>>);  // W_v rows 64 != vdim 48
static_assert(!takes_weights<weight<64, 64>, weight<32, 16>, weight<48, 64>,
                             weight<64, 64>>);  // W_v cols 64 != 2 · 8
static_assert(!takes_weights<weight<64, 64>, weight<32, 16>, weight<48, 16>,
                             weight<48, 64>>);  // W_o rows 48 != 8 · 8
static_assert(!takes_weights<weight<64, 64>, weight<32, 16>, weight<48, 16>,
                             weight<64, 48>>);  // W_o cols 48 != d_model 64
static_assert(!takes_weights<weight<64, 64, double>, weight<32, 16>, weight<48, 16>,
                             weight<64, 64>>);  // double W_q, float module
static_assert(
    !takes_weights<tensor<float, shape<head<8>, model<64>, head_dim<8>>>, weight<32, 16>,
                   weight<48, 16>, weight<64, 64>>);  // W_q per head: the module's are stacked
static_assert(!gqa::accepts_weights<weight<64, 64>, const weight<32, 16>&, const weight<48, 16>&,
                                    const weight<64, 64>&>);  // temporary tensor

static_assert(takes_biases<bias<64>, bias<16>, bias<16>, bias<64>>);
static_assert(!takes_biases<bias<48>, bias<16>, bias<16>, bias<64>>);  // b_q 48 != 8 · 8
static_assert(!takes_biases<bias<64>, bias<32>, bias<16>, bias<64>>);  // b_k 32 != 2 · 8
static_assert(!takes_biases<bias<64>, bias<16>, bias<48>, bias<64>>);  // b_v 48 != 2 · 8
static_assert(!takes_biases<bias<64>, bias<16>, bias<16>, bias<48>>);  // b_o 48 != d_model 64
static_assert(!takes_biases<bias<64, double>, bias<16>, bias<16>, bias<64>>);  // double b_q
static_assert(!takes_biases<tensor<float, shape<head<8>, head_dim<8>>>, bias<16>, bias<16>,
                            bias<64>>);  // b_q per head: 64 entries, but the module's are (model)
static_assert(!no_bias_mha::accepts_biases<const bias<64>&, const bias<64>&, const bias<64>&,
                                           const bias<64>&>);  // no biases to take

// Any other argument list is reported by a catch-all constructor
// (module_takes_four_weights_or_eight_tensors, tests/compile_fail/); it leaves copies and moves
// to the copy and move constructors, and converts nothing implicitly.
static_assert(std::is_copy_constructible_v<gqa> && std::is_move_constructible_v<gqa>);
static_assert(std::is_copy_assignable_v<gqa> && std::is_move_assignable_v<gqa>);
static_assert(!std::is_convertible_v<const weight<64, 64>&, gqa>);
static_assert(!std::is_convertible_v<const mha&, gqa>);
static_assert(!std::is_convertible_v<const gqa&, mha>);

// ---- forward -----------------------------------------------------------------------------

template <class M, class XQ, class XK, class XV, class... Masks>
concept can_forward = M::template accepts_forward<XQ, XK, XV, const Masks&...>;
template <class M, class X, class... Masks>
concept can_self_attend = M::template accepts_forward<X, const Masks&...>;
template <class M, class... Args>
concept forward_accepts = M::template accepts_forward<Args...>;
template <class M, class... X>
using forward_t = decltype(std::declval<const M&>().forward(std::declval<X>()...));

template <std::size_t B, std::size_t S, std::size_t W, class T = float>
using activation = tensor<T, shape<batch<B>, seq<S>, model<W>>>;
using activation_dyn = tensor<float, shape<batch<>, seq<>, model<64>>>;
using x_t = const activation<2, 16, 64>&;

static_assert(can_forward<mha, x_t, x_t, x_t>);
static_assert(can_self_attend<mha, x_t>);
static_assert(can_self_attend<mha, x_t, argus::causal_mask>);
static_assert(can_forward<mha, x_t, const activation<2, 12, 64>&,
                          const activation<2, 12, 64>&>);  // cross-attention
static_assert(can_forward<gqa, x_t, const activation<2, 12, 32>&,
                          const activation<2, 12, 48>&>);  // kdim, vdim
static_assert(
    can_forward<mha, const activation_dyn&, const activation_dyn&, const activation_dyn&>);
static_assert(can_forward<mha, x_t, const activation_dyn&,
                          const activation_dyn&>);  // batch 2 vs dyn: at run time
static_assert(can_forward<mha, x_t, x_t, x_t, argus::causal_mask,
                          decltype(argus::ignore_keys(
                              std::declval<const tensor<bool, shape<batch<2>, seq<16>>>&>()))>);

// What forward builds: (batch, seq_q, d_model); the attention weights (batch, head, seq_q, seq_kv).
static_assert(
    std::is_same_v<forward_t<mha, x_t, x_t, x_t>::shape_type, shape<batch<2>, seq<16>, model<64>>>);
static_assert(std::is_same_v<forward_t<mha, x_t>::shape_type, shape<batch<2>, seq<16>, model<64>>>);
static_assert(std::is_same_v<forward_t<mha, x_t, const activation<2, 12, 64>&,
                                       const activation<2, 12, 64>&>::shape_type,
                             shape<batch<2>, seq<16>, model<64>>>);  // seq_q, not seq_kv
static_assert(std::is_same_v<forward_t<mha, const activation_dyn&>::shape_type,
                             shape<batch<dyn>, seq<dyn>, model<64>>>);  // dyn stays dyn
static_assert(
    std::is_same_v<forward_t<argus::multi_head_attention<64, 4, mha_options{.d_k = 32, .d_v = 24}>,
                             x_t>::shape_type,
                   shape<batch<2>, seq<16>, model<64>>>);  // W_o maps h·d_v = 96 back to 64
static_assert(std::is_same_v<forward_t<mha, x_t, x_t, x_t>::value_type, float>);
static_assert(argus::expression_has_attention_weights<forward_t<mha, x_t, x_t, x_t>>);
static_assert(
    std::is_same_v<decltype(argus::attention_weights(
                       std::declval<forward_t<mha, x_t, const activation<2, 12, 64>&,
                                              const activation<2, 12, 64>&>>()))::shape_type,
                   shape<batch<2>, head<8>, seq<16>, seq<12>>>);

static_assert(
    !can_forward<mha, const activation<2, 16, 32>&, x_t, x_t>);  // x_q 32 wide, d_model 64
static_assert(!can_forward<gqa, x_t, x_t, const activation<2, 16, 48>&>);  // x_k 64 wide, kdim 32
static_assert(!can_forward<gqa, x_t, const activation<2, 16, 32>&, x_t>);  // x_v 64 wide, vdim 48
static_assert(!can_forward<mha, x_t, const activation<2, 12, 64>&,
                           const activation<2, 10, 64>&>);  // 12 keys, 10 values
static_assert(!can_forward<mha, x_t, const activation<3, 16, 64>&,
                           const activation<3, 16, 64>&>);                 // batch 2 vs 3
static_assert(!can_forward<mha, x_t, x_t, const activation<3, 16, 64>&>);  // batch 2 vs 3
static_assert(!can_forward<mha, const activation<2, 16, 64, double>&, x_t,
                           x_t>);  // double queries, float module
static_assert(!can_forward<mha, x_t, const activation<2, 16, 64, double>&, x_t>);  // double keys
static_assert(!can_forward<mha, x_t, x_t, const activation<2, 16, 64, double>&>);  // double values
static_assert(!can_forward<mha, const tensor<float, shape<batch<2>, model<64>, seq<64>>>&, x_t,
                           x_t>);                                    // (batch, model, seq)
static_assert(!can_forward<mha, activation<2, 16, 64>, x_t, x_t>);   // temporary tensor
static_assert(!can_self_attend<mha, x_t, x_t>);                      // a tensor is not a mask
static_assert(!can_self_attend<mha, const activation<2, 16, 32>&>);  // 32 wide
static_assert(!can_self_attend<mha, x_t, argus::causal_mask, x_t>);  // an input after a mask
static_assert(!forward_accepts<mha, x_t, x_t>);                      // two inputs: one or three
static_assert(!forward_accepts<mha, x_t, x_t, x_t, x_t>);            // four inputs
static_assert(forward_accepts<mha, x_t, argus::causal_mask>);        // self-attention, masked

}  // namespace static_module_test
