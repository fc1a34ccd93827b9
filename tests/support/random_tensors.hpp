// tests/support/random_tensors.hpp -- test support: seeded random tensors and the relative
// difference the evaluator tests compare with.
#pragma once

#include <argus/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>

namespace argus::test {

/// The generator of one test executable; the seed fixes every case.
inline std::mt19937& rng() {
  static std::mt19937 g(20261121);
  return g;
}

/// Fills t with normal values of standard deviation `scale`.
template <class T, Shape S>
void randomize(tensor<T, S>& t, double scale = 1.0) {
  std::normal_distribution<double> nd(0.0, scale);
  for (auto& v : t) v = static_cast<T>(nd(rng()));
}

/// Fills an attention module's weights with normal values: W_Q and W_K of standard deviation
/// qk_scale, W_V and W_O of v_scale, and its biases, where it has them, of bias_scale (in that
/// order: one seed, one module).
template <class M>
void randomize_module(M& m, double qk_scale, double v_scale, double bias_scale) {
  randomize(m.w_q, qk_scale), randomize(m.w_k, qk_scale);
  randomize(m.w_v, v_scale), randomize(m.w_o, v_scale);
  if constexpr (M::has_bias)
    randomize(m.b_q, bias_scale), randomize(m.b_k, bias_scale), randomize(m.b_v, bias_scale),
        randomize(m.b_o, bias_scale);
}

/// max over elements of |a - b| / (1 + |b|); infinite if either side is not finite.
template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a.data()[i]), y = static_cast<double>(b.data()[i]);
    if (!std::isfinite(x) || !std::isfinite(y)) return std::numeric_limits<double>::infinity();
    m = std::max(m, std::abs(x - y) / (1 + std::abs(y)));
  }
  return m;
}

}  // namespace argus::test
