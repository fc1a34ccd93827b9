// argus/eval/select.hpp -- evaluation layer: which evaluator runs which node.
//
// The table of fused patterns, in priority order. A policy evaluates a node with the first
// pattern of its list that matches the node's type; a node no pattern matches runs its
// unfused step (eval/unfused.hpp), whose operands go through the same policy again. So a
// sub-tree a pattern does not recognise falls back to unfused steps, never to a wrong
// answer. To fuse a new pattern: write eval/fused_<pattern>.hpp and add one row here.
//
// A pattern P provides `template <class E> static constexpr bool matches` and
// `static auto evaluate(const E&, const Ev&)`.
#pragma once

#include <type_traits>

namespace argus {

/// Evaluate every step separately, materialising each result (the specification).
struct unfused_policy {
  static constexpr const char* name = "unfused";
};
/// Evaluate with the fused patterns of select.hpp where they match.
struct fused_policy {
  static constexpr const char* name = "fused";
};
inline constexpr unfused_policy unfused{};
inline constexpr fused_policy fused{};

/// An evaluation policy: argus::unfused or argus::fused.
template <class P>
concept EvaluationPolicy = std::is_same_v<P, unfused_policy> || std::is_same_v<P, fused_policy>;

namespace detail {

template <class... Patterns>
struct pattern_list {};

/// The patterns each policy tries, in order: none for unfused; the fused policy's row is
/// patterns_of<fused_policy> in eval/fused_attention.hpp.
template <class Policy>
struct patterns_of {
  using type = pattern_list<>;
};

template <class List, class E>
struct first_match {
  using type = void;
};
template <class P, class... Ps, class E>
struct first_match<pattern_list<P, Ps...>, E> {
  using type = std::conditional_t<P::template matches<E>, P,
                                  typename first_match<pattern_list<Ps...>, E>::type>;
};

/// The pattern that evaluates E under Policy, or void for the unfused step.
template <class Policy, class E>
using selected_pattern = typename first_match<typename patterns_of<Policy>::type, E>::type;

}  // namespace detail
}  // namespace argus
