// tests/support/random_cases.hpp -- test support: what the differential tests
// (tests/runtime/eval/differential.cpp, tests/runtime/grad/differential.cpp) share: head
// configurations, the seed of each case, how a case is replayed, and the kinds of values
// they draw. No Boost.Test here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

namespace argus::test {

/// A head configuration: value type, query heads, K/V heads, d_k, d_v.
template <class T, std::size_t H, std::size_t G, std::size_t DK, std::size_t DV>
struct cfg {
  using value_type = T;
  static constexpr std::size_t heads = H, kv_heads = G, d_k = DK, d_v = DV;
};

/// The environment variable `name` as a number (strtoull, base 0), if it is set.
inline std::optional<std::uint64_t> env_number(const char* name) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::strtoull(s, nullptr, 0);
}

/// The seed of case n: splitmix64 of n, so neighbouring cases are unrelated.
inline std::uint64_t case_seed(std::uint64_t n) {
  std::uint64_t z = n + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Runs a differential test's cases: the one seed in environment variable `seed_var` (a
/// replay, verbose), else case_seed(0), case_seed(1), ... for the count in `cases_var`
/// (default `default_cases`), stopping after 10 failures. run(seed, verbose) returns whether
/// the case passed. Returns {cases run, failures}.
template <class Run>
std::pair<std::size_t, std::size_t> run_seeds(const char* seed_var, const char* cases_var,
                                              std::size_t default_cases, Run run) {
  if (const auto seed = env_number(seed_var)) return {1, run(*seed, true) ? 0 : 1};
  const std::size_t cases = env_number(cases_var).value_or(default_cases);
  std::size_t n = 0, failures = 0;
  for (; n < cases && failures < 10; ++n) failures += run(case_seed(n), false) ? 0 : 1;
  return {n, failures};
}

/// The kinds of values a case draws.
enum class values { normal, large_logits, ties, denormal };

/// A kind's name in a case's report; `large` names the large logits (each test scales them
/// its own way).
inline const char* name(values v, const char* large) {
  switch (v) {
    case values::normal:
      return "normal";
    case values::large_logits:
      return large;
    case values::ties:
      return "exact ties";
    default:
      return "denormal";
  }
}

/// f(std::type_identity<C>{}) for C the index-th type of the tuple Configs (nothing when
/// index is past its end): a case draws its configuration at run time.
template <class Configs, std::size_t I = 0, class F>
void with_config(std::size_t index, F&& f) {
  if constexpr (I < std::tuple_size_v<Configs>) {
    if (index == I) return f(std::type_identity<std::tuple_element_t<I, Configs>>{});
    with_config<Configs, I + 1>(index, std::forward<F>(f));
  }
}

/// What one case drew, printed when it fails.
struct case_report {
  std::ostringstream text;
  bool failed = false;
};

}  // namespace argus::test
