// argus/grad/optimizers.hpp -- training layer: SGD with momentum and Adam for the
// parameters of a multi_head_attention module.
//
//     argus::adam<mha> opt{.rate = 1e-3};
//     auto g = argus::backward(tape, dout, argus::fused);
//     opt.step(m, g);                   // w_q, w_k, w_v, w_o (and the biases) updated in place
//
// Each optimiser keeps its state (velocity; first and second moments) in tensors of the
// parameters' own types, one per parameter, created zero on the first step. The input
// gradients of g (x_q, x_k, x_v) are not used.
#pragma once

#include <argus/expr/attention.hpp>

#include <cmath>
#include <cstddef>
#include <type_traits>

namespace argus {

/// An optimiser's Module is a multi_head_attention (prepack(m) takes the same rule).
template <class Module>
concept argument_is_a_multi_head_attention = MultiHeadAttentionModule<Module>;

/// opt.step(m, g): g = backward(...) of a tape of a module of m's type.
template <class G, class Module>
concept gradients_are_of_the_module = requires {
  typename G::module_type;
  requires std::is_same_v<typename G::module_type, Module>;
};

namespace detail {

/// One state tensor per parameter of Module, of that parameter's type (zero at first).
template <class Module>
struct parameter_state {
  decltype(Module::w_q) w_q;
  decltype(Module::w_k) w_k;
  decltype(Module::w_v) w_v;
  decltype(Module::w_o) w_o;
  [[no_unique_address]] decltype(Module::b_q) b_q;
  [[no_unique_address]] decltype(Module::b_k) b_k;
  [[no_unique_address]] decltype(Module::b_v) b_v;
  [[no_unique_address]] decltype(Module::b_o) b_o;
};

/// Calls f(parameter, its gradient, its state tensors...) for each parameter of module m:
/// w_q w_k w_v w_o, then b_q b_k b_v b_o when the module has biases.
template <class M, class G, class F, class... S>
void for_each_parameter(M& m, const G& g, F&& f, S&... state) {
  f(m.w_q, g.w_q, state.w_q...), f(m.w_k, g.w_k, state.w_k...);
  f(m.w_v, g.w_v, state.w_v...), f(m.w_o, g.w_o, state.w_o...);
  if constexpr (M::has_bias) {
    f(m.b_q, g.b_q, state.b_q...), f(m.b_k, g.b_k, state.b_k...);
    f(m.b_v, g.b_v, state.b_v...), f(m.b_o, g.b_o, state.b_o...);
  }
}

}  // namespace detail

/// Stochastic gradient descent with momentum: v ← momentum·v + g, w ← w − rate·v
/// (PyTorch's SGD with dampening 0; momentum 0 is plain SGD).
template <class Module>
  requires argument_is_a_multi_head_attention<Module>
struct sgd {
  using value_type = typename Module::value_type;
  value_type rate = value_type(0.01);
  value_type momentum = value_type(0);
  detail::parameter_state<Module> velocity{};

  /// Updates m's parameters from g = backward(...) of a tape of m.
  // clang-format off
  template <class G>
  requires gradients_are_of_the_module<G, Module>
  void step(Module& m, const G& g) {
    // clang-format on
    detail::for_each_parameter(
        m, g,
        [&](auto& w, const auto& dw, auto& v) {
          for (std::size_t e = 0; e < w.size(); ++e) {
            v.data()[e] = momentum * v.data()[e] + dw.data()[e];
            w.data()[e] -= rate * v.data()[e];
          }
        },
        velocity);
  }
};

/// Adam (Kingma & Ba): m ← β1·m + (1 − β1)·g, s ← β2·s + (1 − β2)·g², and
/// w ← w − rate · m̂ / (√ŝ + ε) with the bias corrections m̂ = m / (1 − β1^t), ŝ = s / (1 − β2^t).
template <class Module>
  requires argument_is_a_multi_head_attention<Module>
struct adam {
  using value_type = typename Module::value_type;
  value_type rate = value_type(0.001);
  value_type beta1 = value_type(0.9);
  value_type beta2 = value_type(0.999);
  value_type epsilon = value_type(1e-8);
  std::size_t steps = 0;
  detail::parameter_state<Module> first{};
  detail::parameter_state<Module> second{};

  /// Updates m's parameters from g = backward(...) of a tape of m.
  // clang-format off
  template <class G>
  requires gradients_are_of_the_module<G, Module>
  void step(Module& m, const G& g) {
    // clang-format on
    ++steps;
    const value_type c1 = value_type(1) - std::pow(beta1, value_type(steps));
    const value_type c2 = value_type(1) - std::pow(beta2, value_type(steps));
    detail::for_each_parameter(
        m, g,
        [&](auto& w, const auto& dw, auto& mo, auto& so) {
          for (std::size_t e = 0; e < w.size(); ++e) {
            const value_type grad = dw.data()[e];
            value_type& a = mo.data()[e];
            value_type& b = so.data()[e];
            a = beta1 * a + (value_type(1) - beta1) * grad;
            b = beta2 * b + (value_type(1) - beta2) * grad * grad;
            w.data()[e] -= rate * (a / c1) / (std::sqrt(b / c2) + epsilon);
          }
        },
        first, second);
  }
};

}  // namespace argus
