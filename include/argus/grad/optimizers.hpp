// argus/grad/optimizers.hpp -- training layer: SGD with momentum and Adam for the
// parameters of a multi_head_attention module.
//
//     argus::adam<mha> opt{.rate = 1e-3};
//     auto g = argus::backward(tape, dout, argus::fused);
//     opt.step(m, g);                   // w_q, w_k, w_v, w_o (and the biases) updated in place
//
// Each optimiser keeps its state (velocity; first and second moments) in tensors of the
// parameters' own types, one per parameter, created zero with the optimiser. The input
// gradients of g (x_q, x_k, x_v) are not used, so they may have been moved out of g.
//
// step checks everything before it changes a weight, so a step that throws leaves the module
// and the optimiser as they were:
//   - the hyper-parameters (the options are plain members, set by designated initialisers and
//     free to change between steps, so they are checked on each step, not at construction):
//     std::invalid_argument naming the parameter and its value;
//   - that every tensor it reads or writes has storage: the module's parameters, the
//     gradients' parameter gradients and the optimiser's own state, each of which a move
//     leaves without storage. shape_error names the tensor. A moved-from optimiser is not
//     made valid again: its state (and Adam's step count) went to the optimiser it was moved
//     into, and starting over silently would be a different optimiser; assign it a new one.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/expr/attention.hpp>

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace argus {

/// An optimiser's Module is a multi_head_attention (prepack(m) takes the same rule).
template <class Module>
concept argument_is_a_multi_head_attention = MultiHeadAttentionModule<Module>;

/// opt.step(m, g): g = backward(...) of a tape of a module of m's type (its parameters'
/// gradients of the module's parameters' types; a tape has the module_type but no gradients).
template <class G, class Module>
concept gradients_are_of_the_module = requires(const G& g) {
  typename G::module_type;
  requires std::is_same_v<typename G::module_type, Module>;
  { g.w_q } -> std::same_as<const decltype(Module::w_q)&>;
  { g.w_k } -> std::same_as<const decltype(Module::w_k)&>;
  { g.w_v } -> std::same_as<const decltype(Module::w_v)&>;
  { g.w_o } -> std::same_as<const decltype(Module::w_o)&>;
};

/// opt.step(m, g) updates m in place: m is a non-const lvalue of the optimiser's Module. Arg is
/// the type step deduces for m, which is Module& exactly when the rule holds (a const module,
/// a temporary, or a module of another type gives something else).
template <class Arg, class Module>
concept module_is_the_optimizers_module = std::is_same_v<Arg, Module&>;

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

/// Calls f(name, parameter, its gradient, its state tensors...) for each parameter of module
/// m: w_q w_k w_v w_o, then b_q b_k b_v b_o when the module has biases.
template <class M, class G, class F, class... S>
void for_each_parameter(M& m, const G& g, F&& f, S&... state) {
  f("w_q", m.w_q, g.w_q, state.w_q...), f("w_k", m.w_k, g.w_k, state.w_k...);
  f("w_v", m.w_v, g.w_v, state.w_v...), f("w_o", m.w_o, g.w_o, state.w_o...);
  if constexpr (M::has_bias) {
    f("b_q", m.b_q, g.b_q, state.b_q...), f("b_k", m.b_k, g.b_k, state.b_k...);
    f("b_v", m.b_v, g.b_v, state.b_v...), f("b_o", m.b_o, g.b_o, state.b_o...);
  }
}

/// Throws shape_error when tensor t has no storage, naming it ("the module's w_q", "the
/// optimiser's velocity of w_q": whose, then state and " of " if state is not null, then name)
/// and saying why and what to do. Its shape's size is used, not t.size(): a moved-from tensor
/// with static extents keeps its shape but has a buffer of 0 elements. The message is built
/// only on failure: step runs this check on every tensor of every step.
template <class T>
void check_optimizer_operand(const char* op, const char* whose, const char* state, const char* name,
                             const T& t, const char* why) {
  if (lacks_storage(t))
    throw shape_error(std::string(op) + ": " + whose + " " +
                      (state ? std::string(state) + " of " : std::string()) + name + " (" +
                      std::to_string(t.shape().size()) + " elements) has no storage: " + why);
}

/// Throws std::invalid_argument "<op>: <name> is <value>; it must <rule>" unless ok. The value
/// is written with as few digits as give it back in its own type T, at least 6 (as "%g"): a
/// beta1 of 1.0000001f reads as such, not as the "1" that "%g" would show.
template <class T>
void check_hyper_parameter(bool ok, const char* op, const char* name, T value, const char* rule) {
  if (ok) return;
  char text[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, double(value));
    if (T(std::strtod(text, nullptr)) == value || value != value) break;  // NaN reads "nan"
  }
  throw std::invalid_argument(std::string(op) + ": " + name + " is " + text + "; it must " + rule);
}

/// rate: finite and >= 0 (0 leaves the weights as they are, which is harmless).
template <class T>
void check_rate(const char* op, T rate) {
  check_hyper_parameter(std::isfinite(rate) && rate >= 0, op, "rate", rate,
                        "be finite and at least 0");
}

/// A decay factor (momentum, beta1, beta2) in [0, 1): at 1 the state never forgets and, in
/// Adam, the bias correction divides by 0; past 1 or below 0 the state grows or oscillates.
template <class T>
void check_decay(const char* op, const char* name, T value) {
  check_hyper_parameter(value >= 0 && value < 1, op, name, value, "lie in [0, 1)");  // NaN fails
}

/// Throws shape_error, before anything is written, when a tensor that step reads or writes
/// has no storage (a moved-from module, gradients or optimiser). state_names[i] names what
/// state[i] holds ("velocity", "first moment").
template <class Module, class G, class... S>
void check_step_storage(const char* op, Module& m, const G& g,
                        const std::array<const char*, sizeof...(S)>& state_names, S&... state) {
  for_each_parameter(
      m, g,
      [&](const char* name, const auto& w, const auto& dw, const auto&... s) {
        check_optimizer_operand(op, "the module's", nullptr, name, w,
                                "the module (or this tensor) was moved from; assign it a value "
                                "before stepping");
        check_optimizer_operand(op, "the gradients'", nullptr, name, dw,
                                "the gradients (or this tensor) were moved from; pass the "
                                "gradients that backward() returned");
        std::size_t i = 0;
        (check_optimizer_operand(op, "the optimiser's", state_names[i++], name, s,
                                 "the optimiser (or this tensor) was moved from; assign it a "
                                 "new optimiser before stepping"),
         ...);
      },
      state...);
}

/// The rules of every optimiser's step(m, g), in order: m is a non-const lvalue of the
/// optimiser's Module, g that module's gradients. Reports the first broken one (one
/// static_assert, so one misuse is one error: a constraint on m would only say "no matching
/// function") and gives false; true when both hold. A new optimiser's step starts with it.
template <class Module, class M, class G>
constexpr bool step_accepted() {
  if constexpr (!module_is_the_optimizers_module<M, Module>) {
    static_assert(module_is_the_optimizers_module<M, Module>,
                  "module_is_the_optimizers_module: an optimiser's step(m, g) (argus::sgd, "
                  "argus::adam) updates m in place: m is a non-const lvalue of the optimiser's "
                  "Module");
    return false;
  } else if constexpr (!gradients_are_of_the_module<G, Module>) {
    static_assert(gradients_are_of_the_module<G, Module>,
                  "gradients_are_of_the_module: an optimiser's step(m, g) (argus::sgd, "
                  "argus::adam): g is backward(...) of a tape of a module of the optimiser's "
                  "Module");
    return false;
  } else {
    return true;
  }
}

}  // namespace detail

/// Stochastic gradient descent with momentum: v ← momentum·v + g, w ← w − rate·v
/// (PyTorch's SGD with dampening 0; momentum 0 is plain SGD).
/// Hyper-parameters, checked by step: rate finite and >= 0, momentum in [0, 1).
template <class Module>
  requires(argument_is_a_multi_head_attention<Module> || detail::is_rejected<Module>)
struct sgd {
  using value_type = typename Module::value_type;
  value_type rate = value_type(0.01);
  value_type momentum = value_type(0);
  detail::parameter_state<Module> velocity{};

  /// Updates m's parameters from g = backward(...) of a tape of m. m is a non-const Module
  /// and g its gradients (detail::step_accepted names the first broken rule, and nothing more
  /// is compiled). Throws std::invalid_argument for a bad hyper-parameter and shape_error for
  /// a tensor without storage, before writing anything.
  template <class M, class G>
  void step(M&& m, const G& g) {
    if constexpr (detail::step_accepted<Module, M, G>()) {
      constexpr const char* op = "argus::sgd::step";
      detail::check_rate(op, rate);
      detail::check_decay(op, "momentum", momentum);
      detail::check_step_storage(op, m, g, {"velocity"}, velocity);
      detail::for_each_parameter(
          m, g,
          [&](const char*, auto& w, const auto& dw, auto& v) {
            for (std::size_t e = 0; e < w.size(); ++e) {
              v.data()[e] = momentum * v.data()[e] + dw.data()[e];
              w.data()[e] -= rate * v.data()[e];
            }
          },
          velocity);
    }
  }
  /// Gradients of a rejected backward() (its error is already reported): nothing, silently,
  /// so that one misuse is one error.
  template <class M>
  void step(M&&, detail::rejected) {}
};

/// Adam (Kingma & Ba): m ← β1·m + (1 − β1)·g, s ← β2·s + (1 − β2)·g², and
/// w ← w − rate · m̂ / (√ŝ + ε) with the bias corrections m̂ = m / (1 − β1^t), ŝ = s / (1 − β2^t).
/// Hyper-parameters, checked by step: rate finite and >= 0, beta1 and beta2 in [0, 1),
/// epsilon finite and > 0 (at 0 a zero gradient divides 0 by 0).
template <class Module>
  requires(argument_is_a_multi_head_attention<Module> || detail::is_rejected<Module>)
struct adam {
  using value_type = typename Module::value_type;
  value_type rate = value_type(0.001);
  value_type beta1 = value_type(0.9);
  value_type beta2 = value_type(0.999);
  value_type epsilon = value_type(1e-8);
  std::size_t steps = 0;
  detail::parameter_state<Module> first{};
  detail::parameter_state<Module> second{};

  /// Updates m's parameters from g = backward(...) of a tape of m. m is a non-const Module
  /// and g its gradients (detail::step_accepted names the first broken rule, and nothing more
  /// is compiled). Throws std::invalid_argument for a bad hyper-parameter and shape_error for
  /// a tensor without storage, before writing anything (steps included).
  template <class M, class G>
  void step(M&& m, const G& g) {
    if constexpr (detail::step_accepted<Module, M, G>()) {
      constexpr const char* op = "argus::adam::step";
      detail::check_rate(op, rate);
      detail::check_decay(op, "beta1", beta1);
      detail::check_decay(op, "beta2", beta2);
      detail::check_hyper_parameter(std::isfinite(epsilon) && epsilon > 0, op, "epsilon", epsilon,
                                    "be finite and greater than 0");
      detail::check_step_storage(op, m, g, {"first moment", "second moment"}, first, second);
      ++steps;
      const value_type c1 = value_type(1) - std::pow(beta1, value_type(steps));
      const value_type c2 = value_type(1) - std::pow(beta2, value_type(steps));
      detail::for_each_parameter(
          m, g,
          [&](const char*, auto& w, const auto& dw, auto& mo, auto& so) {
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
  }
  /// Gradients of a rejected backward() (its error is already reported): nothing, silently,
  /// so that one misuse is one error.
  template <class M>
  void step(M&&, detail::rejected) {}
};

/// The optimisers of a rejected module (`sgd<decltype(m)>` where m's error is already
/// reported): their hyper-parameters, and a step that does nothing, silently, so that one
/// misuse is one error.
template <>
struct sgd<detail::rejected> {
  double rate = 0.01, momentum = 0;
  template <class M, class G>
  void step(M&&, const G&) {}
};
template <>
struct adam<detail::rejected> {
  double rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  std::size_t steps = 0;
  template <class M, class G>
  void step(M&&, const G&) {}
};

}  // namespace argus
