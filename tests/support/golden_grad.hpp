// tests/support/golden_grad.hpp -- test support: runs the gradient cases of shared/golden_grad
// (format and tolerances in its README.md) through forward_for_training and backward.
//
// The inputs, weights and masks come from shared/golden/<case> (golden_mha.hpp builds the
// module type of each case); shared/golden_grad/<case>/grad.txt lists dout and the
// reference gradients. The gradient directory is $ARGUS_GOLDEN_GRAD_DIR, else the sibling
// "golden_grad" of golden_dir().
#pragma once

#include "golden.hpp"
#include "golden_mha.hpp"
#include <argus/grad/training.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace argus::test {

inline std::filesystem::path golden_grad_dir() {
  if (const char* env = std::getenv("ARGUS_GOLDEN_GRAD_DIR"); env != nullptr && *env != '\0')
    return env;
  std::filesystem::path d = golden_dir();
  if (!d.has_filename()) d = d.parent_path();
  return d.parent_path() / "golden_grad";
}

/// grad.txt of a case, with its tensors (dout and every d_<t>, float32 and float64).
inline golden_case load_golden_grad(std::string_view name) {
  golden_case c;
  c.name = std::string(name);
  c.dir = golden_grad_dir() / c.name;
  const std::filesystem::path grad_txt = c.dir / "grad.txt";
  std::ifstream in(grad_txt);
  if (!in) detail::fail(grad_txt, "missing file (no such gradient case?)");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      detail::fail(grad_txt, "line " + detail::in_quotes(line) + " has no '='");
    c.fields.insert_or_assign(line.substr(0, eq), line.substr(eq + 1));
  }
  for (std::string_view t : detail::split_commas(c.field("tensors")))
    c.tensors.push_back(detail::load_tensor(c, grad_txt, t));
  return c;
}

/// Compares gradient `t` (e.g. "x_q") of value type T with d_<t>_f64: float within
/// tolerance.f32 · max(1, max_abs.d_<t>), double within tolerance.f64 · max(1, max_abs.d_<t>).
/// (The values y.data()[0, y.size()): one function per value type, not per tensor type.)
template <class T>
void check_gradient_values(const golden_case& g, std::string_view t, const T* y, std::size_t size,
                           const char* policy) {
  const std::string name = "d_" + std::string(t);
  const golden_tensor& ref = g.tensor(name + "_f64");
  const double scale = std::max(1.0, std::stod(g.field("max_abs." + name)));
  const double tol =
      std::stod(g.field(std::is_same_v<T, float> ? "tolerance.f32" : "tolerance.f64")) * scale;
  BOOST_TEST_REQUIRE(size == ref.f64.size(), g.name << " " << name);
  double worst = 0;
  std::size_t over = 0;
  for (std::size_t i = 0; i < ref.f64.size(); ++i) {
    const double v = double(y[i]);
    const double err = std::isfinite(v) ? std::abs(v - ref.f64[i]) : 1e300;
    worst = std::max(worst, err);
    over += err > tol ? 1 : 0;
  }
  BOOST_TEST(over == 0u, g.name << " " << name << " (" << policy << ", "
                                << (std::is_same_v<T, float> ? "float32" : "float64")
                                << "): max |err| " << worst << ", tolerance " << tol << ", " << over
                                << " of " << ref.f64.size() << " over");
}
template <class T, class R>
void check_gradient(const golden_case& g, std::string_view t, const R& y, const char* policy) {
  check_gradient_values<T>(g, t, y.data(), std::size_t(y.size()), policy);
}

/// The gradient case Case through forward_for_training and backward under policy, in T.
template <class Case, class T, class Policy>
void run_golden_grad(Policy policy) {
  const golden_case c = load_golden_case(Case::name);
  const golden_case gr = load_golden_grad(Case::name);
  const auto mha = golden_module<Case, T>(c);
  using mha_t = std::remove_const_t<decltype(mha)>;
  tensor<T, shape<batch<>, seq<>, model<mha_t::d_model>>> x_q(c.batch,
                                                              c.seq_q);         // (B,SEQ_Q,D_MODEL)
  tensor<T, shape<batch<>, seq<>, model<mha_t::kdim>>> x_k(c.batch, c.seq_kv);  // (B,SEQ_KV,KDIM)
  tensor<T, shape<batch<>, seq<>, model<mha_t::vdim>>> x_v(c.batch, c.seq_kv);  // (B,SEQ_KV,VDIM)
  tensor<T, shape<batch<>, seq<>, model<mha_t::d_model>>> dout(c.batch,
                                                               c.seq_q);  // (B,SEQ_Q,D_MODEL)
  fill_from(x_q, c.tensor("x_q"));
  fill_from(x_k, c.tensor("x_k"));
  fill_from(x_v, c.tensor("x_v"));
  fill_from(dout, gr.tensor("dout"));
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(c.batch, c.seq_kv);  // (B,SEQ_KV)
  if (c.has_tensor("key_padding_mask")) {
    const auto& p = c.tensor("key_padding_mask").u8;
    std::copy(p.begin(), p.end(), padding.data());
  }
  auto check = [&](auto&& tape) {
    const auto g = backward(tape, dout, policy);
    check_gradient<T>(gr, "x_q", g.x_q, Policy::name);
    check_gradient<T>(gr, "x_k", g.x_k, Policy::name);
    check_gradient<T>(gr, "x_v", g.x_v, Policy::name);
    check_gradient<T>(gr, "W_q", g.w_q, Policy::name);
    check_gradient<T>(gr, "W_k", g.w_k, Policy::name);
    check_gradient<T>(gr, "W_v", g.w_v, Policy::name);
    check_gradient<T>(gr, "W_o", g.w_o, Policy::name);
    if constexpr (mha_t::has_bias) {
      check_gradient<T>(gr, "b_q", g.b_q, Policy::name);
      check_gradient<T>(gr, "b_k", g.b_k, Policy::name);
      check_gradient<T>(gr, "b_v", g.b_v, Policy::name);
      check_gradient<T>(gr, "b_o", g.b_o, Policy::name);
    }
  };
  if constexpr (Case::mask == golden_mask::none)
    check(forward_for_training(mha, policy, x_q, x_k, x_v));
  if constexpr (Case::mask == golden_mask::causal)
    check(forward_for_training(mha, policy, x_q, x_k, x_v, causal));
  if constexpr (Case::mask == golden_mask::key_padding)
    check(forward_for_training(mha, policy, x_q, x_k, x_v, ignore_keys(padding)));
  if constexpr (Case::mask == golden_mask::both)
    check(forward_for_training(mha, policy, x_q, x_k, x_v, causal, ignore_keys(padding)));
}

}  // namespace argus::test
