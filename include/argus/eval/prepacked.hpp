// argus/eval/prepacked.hpp -- evaluation layer: a multi_head_attention for inference, its
// four weights packed once for the matrix products.
//
//     argus::multi_head_attention<512, 8> mha = ...;      // trained or loaded
//     const auto served = argus::prepack(mha);            // W_q, W_k, W_v, W_o packed once
//     argus::tensor<float, ...> y = argus::evaluate(served.forward(x), argus::fused);
//
// served.forward(...) takes what mha.forward(...) takes, checks the same relations at compile
// and at run time, and builds the same expression, with packed_weight leaves
// (eval/packed_weight.hpp) in place of the module's weights: each projection then reads its
// weight's gemm panels instead of packing W on every call. The result is the same to the bit.
// The packed module holds copies (the weights twice, as elements and as panels; the biases
// once) and cannot be changed: after a training step, prepack the module again. It must
// outlive the expressions its forward builds, as a module must.
#pragma once

#include <argus/eval/packed_weight.hpp>
#include <argus/expr/attention.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace argus {

namespace detail {
/// The packed_weight type of a module's weight member W (a tensor<T, S>).
template <class W>
using packed_weight_for = packed_weight<typename W::value_type, typename W::shape_type>;

/// The member types of prepacked_attention<Module>: Module's weights packed, its biases as they
/// are, for a Module that is a multi_head_attention.
template <class Module, bool = MultiHeadAttentionModule<Module>>
struct prepacked_members {
  using config = Module;  // its value type and widths
  using value_type = typename Module::value_type;
  using w_q = packed_weight_for<decltype(Module::w_q)>;
  using w_k = packed_weight_for<decltype(Module::w_k)>;
  using w_v = packed_weight_for<decltype(Module::w_v)>;
  using w_o = packed_weight_for<decltype(Module::w_o)>;
  using b_q = decltype(Module::b_q);
  using b_k = decltype(Module::b_k);
  using b_v = decltype(Module::b_v);
  using b_o = decltype(Module::b_o);
};
/// Anything else: prepacked_attention's static_assert reports it, and no member of Module is
/// named after it (so that one misuse is one error).
template <class Module>
struct prepacked_members<Module, false> {
  struct config {
    static constexpr std::size_t d_model = 0, heads = 0, kv_heads = 0, d_k = 0, d_v = 0, kdim = 0,
                                 vdim = 0;
    static constexpr bool has_bias = false;
  };
  using value_type = rejected;
  using w_q = rejected;
  using w_k = rejected;
  using w_v = rejected;
  using w_o = rejected;
  using b_q = rejected;
  using b_k = rejected;
  using b_v = rejected;
  using b_o = rejected;
};
}  // namespace detail

/// A multi_head_attention's weights packed for inference, and its biases; forward as the
/// module's. Module is a multi_head_attention<...>.
template <class Module>
class prepacked_attention {
  static_assert(MultiHeadAttentionModule<Module> || detail::is_rejected<Module>,
                "argument_is_a_multi_head_attention: argus::prepacked_attention<Module> packs the "
                "weights of an argus::multi_head_attention; Module is not one");
  using members = detail::prepacked_members<Module>;

 public:
  using module_type = Module;
  using value_type = typename members::value_type;
  static constexpr std::size_t d_model = members::config::d_model;
  static constexpr std::size_t heads = members::config::heads;
  static constexpr std::size_t kv_heads = members::config::kv_heads;
  static constexpr std::size_t d_k = members::config::d_k;
  static constexpr std::size_t d_v = members::config::d_v;
  static constexpr std::size_t kdim = members::config::kdim;
  static constexpr std::size_t vdim = members::config::vdim;
  static constexpr bool has_bias = members::config::has_bias;

  /// Copies and packs m's weights, copies its biases.
  explicit prepacked_attention(const Module& m) requires MultiHeadAttentionModule<Module>
      : w_q(m.w_q),
        w_k(m.w_k),
        w_v(m.w_v),
        w_o(m.w_o),
        b_q(m.b_q),
        b_k(m.b_k),
        b_v(m.b_v),
        b_o(m.b_o) {}
  /// Anything but one Module (another module type, a weight, no argument): reported
  /// (prepacked_attention_takes_its_module), once; copies and moves are left to the copy and
  /// move constructors. (It delegates to the constructor above, so that the members are built.)
  // NOLINTBEGIN(bugprone-forwarding-reference-overload)
  template <class... Args>
    requires(MultiHeadAttentionModule<Module> &&
             !prepacked_attention_takes_its_module<Module, Args...> &&
             !detail::copies_of<prepacked_attention, Args...>)
  explicit prepacked_attention(Args&&...) : prepacked_attention(Module{}) {
    // NOLINTEND(bugprone-forwarding-reference-overload)
    static_assert(prepacked_attention_takes_its_module<Module, Args...>,
                  "prepacked_attention_takes_its_module: argus::prepacked_attention<Module>(m) "
                  "packs the weights of m, a Module; prepack(m) deduces Module from m");
  }
  /// Module is not a multi_head_attention: the class's static_assert has said so, and this
  /// constructor takes the arguments silently rather than add a second error.
  template <class... Args>
  explicit prepacked_attention(Args&&...) requires(!MultiHeadAttentionModule<Module>)
      : w_q{}, w_k{}, w_v{}, w_o{}, b_q{}, b_k{}, b_v{}, b_o{} {}

  /// As Module::forward: forward(x, masks...) or forward(x_q, x_k, x_v, masks...), the same
  /// rules, the same expression, with the packed weights.
  template <class... Args>
  auto forward(Args&&... args) const& {
    if constexpr (forward_accepted<Args...>())
      return Module::forward_with(*this, std::forward<Args>(args)...);
    else
      return detail::rejected{};  // reported by the class's or Module::forward's static_assert
  }
  /// forward on a temporary (`prepack(m).forward(x)`): the expression would hold packed
  /// weights gone at the end of the statement. Reported (module_is_not_a_temporary), once.
  template <class... Args>
  detail::rejected forward(Args&&...) const&& {
    static_assert(module_is_not_a_temporary<const prepacked_attention&&>,
                  "module_is_not_a_temporary: served.forward(...) gives an expression that holds "
                  "the packed weights by reference; name the prepacked_attention first (a "
                  "temporary is gone at the end of the statement)");
    return {};
  }

  /// Whether forward(args...) is accepted; Module::forward_accepted reports its first broken
  /// rule (a Module that is no module is reported by the class, once).
  template <class... Args>
  static constexpr bool forward_accepted() {
    if constexpr (!MultiHeadAttentionModule<Module>)
      return false;
    else
      return Module::template forward_accepted<true, Args...>(detail::mask_positions<Args...>{});
  }

  /// Bytes held: each weight's elements and panels, and the biases.
  std::size_t bytes() const noexcept {
    if constexpr (!MultiHeadAttentionModule<Module>)
      return 0;  // reported by the class's static_assert
    std::size_t b = w_q.bytes() + w_k.bytes() + w_v.bytes() + w_o.bytes();
    if constexpr (has_bias)
      b += (b_q.size() + b_k.size() + b_v.size() + b_o.size()) * sizeof(value_type);
    return b;
  }

  // The weights and biases, read only.
  const typename members::w_q w_q;
  const typename members::w_k w_k;
  const typename members::w_v w_v;
  const typename members::w_o w_o;
  [[no_unique_address]] const typename members::b_q b_q;
  [[no_unique_address]] const typename members::b_k b_k;
  [[no_unique_address]] const typename members::b_v b_v;
  [[no_unique_address]] const typename members::b_o b_o;
};

template <class Module>
prepacked_attention(const Module&) -> prepacked_attention<Module>;

/// The module's weights packed once, for inference: prepacked_attention<Module>(m).
template <class Module>
auto prepack(const Module& m) {
  if constexpr (detail::is_rejected<Module>) {
    return detail::rejected{};  // m's error is already reported
  } else if constexpr (!MultiHeadAttentionModule<Module>) {
    static_assert(MultiHeadAttentionModule<Module>,
                  "argument_is_a_multi_head_attention: prepack(m) packs the weights of an "
                  "argus::multi_head_attention");
    return detail::rejected{};
  } else {
    return prepacked_attention<Module>(m);
  }
}

}  // namespace argus
