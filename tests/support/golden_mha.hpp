// tests/support/golden_mha.hpp -- test support: runs a golden case through argus.
//
// Each golden case has its own static configuration (d_model, heads, kv_heads, d_k, d_v,
// kdim, vdim, bias, mask), so each is a type below; batch and sequence lengths stay
// run-time extents, read from the case. run_golden<Case, T>(policy) builds the module from
// the case's weights, evaluates the output and the per-head attention weights under the
// policy, and compares both with the float64 references: float32 within the README's
// tolerances, float64 within 1e-10 relative; then the same with the module's weights packed
// once (prepack).
#pragma once

#include "golden.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace argus::test {

enum class golden_mask { none, causal, key_padding, both };

template <std::size_t DModel, std::size_t Heads, mha_options Options, golden_mask Mask>
struct golden_spec {
  static constexpr std::size_t d_model = DModel, heads = Heads;
  static constexpr mha_options options = Options;
  static constexpr golden_mask mask = Mask;
};

// clang-format off
struct tiny                  : golden_spec<8,   2, mha_options{.bias = false}, golden_mask::none>        { static constexpr const char* name = "tiny"; };
struct paper_d512_h8         : golden_spec<512, 8, mha_options{},              golden_mask::none>        { static constexpr const char* name = "paper_d512_h8"; };
struct self_attn_bias        : golden_spec<16,  4, mha_options{},              golden_mask::none>        { static constexpr const char* name = "self_attn_bias"; };
struct cross_attn            : golden_spec<16,  2, mha_options{},              golden_mask::none>        { static constexpr const char* name = "cross_attn"; };
struct causal_case           : golden_spec<16,  4, mha_options{},              golden_mask::causal>      { static constexpr const char* name = "causal"; };
struct key_padding           : golden_spec<16,  2, mha_options{},              golden_mask::key_padding> { static constexpr const char* name = "key_padding"; };
struct kdim_vdim             : golden_spec<16,  4, mha_options{.kdim = 12, .vdim = 20}, golden_mask::none> { static constexpr const char* name = "kdim_vdim"; };
struct gqa_h6_kv2            : golden_spec<24,  6, mha_options{.kv_heads = 2}, golden_mask::none>        { static constexpr const char* name = "gqa_h6_kv2"; };
struct batch3_causal_padding : golden_spec<12,  3, mha_options{},              golden_mask::both>        { static constexpr const char* name = "batch3_causal_padding"; };
// clang-format on

/// Every case of shared/golden/index.txt, as a type.
using golden_cases = std::tuple<tiny, paper_d512_h8, self_attn_bias, cross_attn, causal_case,
                                key_padding, kdim_vdim, gqa_h6_kv2, batch3_causal_padding>;

template <class T>
std::vector<T> values_as(const golden_tensor& t) {
  return std::vector<T>(t.f32.begin(), t.f32.end());
}

/// Copies a float32 golden tensor into the `size` elements at out (one function per value
/// type, not per shape).
template <class T>
void fill_values_from(T* out, std::size_t size, const golden_tensor& t) {
  BOOST_TEST_REQUIRE(size == t.f32.size(),
                     t.name << ": " << t.f32.size() << " values for " << size << " elements");
  std::copy(t.f32.begin(), t.f32.end(), out);
}

/// Copies a float32 golden tensor into an argus tensor of value type T.
template <class T, Shape S>
void fill_from(tensor<T, S>& out, const golden_tensor& t) {
  fill_values_from(out.data(), out.size(), t);
}

/// max over elements of |y - ref| / (rel * (max(1, scale) + |ref|)); <= 1 passes.
template <class R>
double fraction_of_relative_bound(const R& y, const std::vector<double>& ref, double scale,
                                  double rel) {
  double worst = 0;
  std::size_t i = 0;
  for (auto v : y) {
    const double err = std::abs(static_cast<double>(v) - ref[i]);
    const double f = std::isfinite(static_cast<double>(v))
                         ? err / (rel * (std::max(1.0, scale) + std::abs(ref[i])))
                         : 1e300;
    worst = std::max(worst, f);
    ++i;
  }
  return worst;
}

/// The module of golden case c, the configuration Case states (checked against c), in T, with
/// the case's weights and biases.
template <class Case, class T>
auto golden_module(const golden_case& c) {
  using mha_t = multi_head_attention<Case::d_model, Case::heads, Case::options, T>;
  // The case must be the configuration this type states.
  BOOST_TEST_REQUIRE(c.d_model == mha_t::d_model);
  BOOST_TEST_REQUIRE(c.heads == mha_t::heads);
  BOOST_TEST_REQUIRE(c.kv_heads == mha_t::kv_heads);
  BOOST_TEST_REQUIRE(c.d_k == mha_t::d_k);
  BOOST_TEST_REQUIRE(c.d_v == mha_t::d_v);
  BOOST_TEST_REQUIRE(c.kdim == mha_t::kdim);
  BOOST_TEST_REQUIRE(c.vdim == mha_t::vdim);
  BOOST_TEST_REQUIRE(c.bias == mha_t::has_bias);
  mha_t mha;
  fill_from(mha.w_q, c.tensor("W_q"));
  fill_from(mha.w_k, c.tensor("W_k"));
  fill_from(mha.w_v, c.tensor("W_v"));
  fill_from(mha.w_o, c.tensor("W_o"));
  if constexpr (mha_t::has_bias) {
    fill_from(mha.b_q, c.tensor("b_q"));
    fill_from(mha.b_k, c.tensor("b_k"));
    fill_from(mha.b_v, c.tensor("b_v"));
    fill_from(mha.b_o, c.tensor("b_o"));
  }
  return mha;
}

template <class Case, class T, class Policy>
void run_golden(Policy policy) {
  const golden_case c = load_golden_case(Case::name);
  const auto mha = golden_module<Case, T>(c);
  using mha_t = std::remove_const_t<decltype(mha)>;
  tensor<T, shape<batch<>, seq<>, model<mha_t::d_model>>> x_q(c.batch,
                                                              c.seq_q);         // (B,SEQ_Q,D_MODEL)
  tensor<T, shape<batch<>, seq<>, model<mha_t::kdim>>> x_k(c.batch, c.seq_kv);  // (B,SEQ_KV,KDIM)
  tensor<T, shape<batch<>, seq<>, model<mha_t::vdim>>> x_v(c.batch, c.seq_kv);  // (B,SEQ_KV,VDIM)
  fill_from(x_q, c.tensor("x_q"));
  fill_from(x_k, c.tensor("x_k"));
  fill_from(x_v, c.tensor("x_v"));
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(c.batch, c.seq_kv);  // (B,SEQ_KV)
  if (c.has_tensor("key_padding_mask")) {
    const auto& p = c.tensor("key_padding_mask").u8;
    std::copy(p.begin(), p.end(), padding.data());
  }

  // The module as built, and with its weights packed once (prepack): both against the truth.
  const auto served = prepack(mha);
  const char* which = "";
  auto check = [&](const auto& y) {
    const auto out = evaluate(y, policy);
    const auto attn = evaluate(attention_weights(y), policy);
    if constexpr (std::is_same_v<T, float>) {
      const tolerance_check o = check_out(c, out);
      BOOST_TEST(o.ok(), c.name << which << " out (" << Policy::name << ", float32): " << o);
      const tolerance_check a = check_attn(c, attn);
      BOOST_TEST(a.ok(), c.name << which << " attn (" << Policy::name << ", float32): " << a);
    } else {
      const double fo =
          fraction_of_relative_bound(out, c.tensor("out_f64").f64, c.max_abs_out, 1e-10);
      BOOST_TEST(fo <= 1.0, c.name << which << " out (" << Policy::name << ", float64): " << fo
                                   << " of the 1e-10 relative bound");
      const double fa = fraction_of_relative_bound(attn, c.tensor("attn_f64").f64, 1.0, 1e-10);
      BOOST_TEST(fa <= 1.0, c.name << which << " attn (" << Policy::name << ", float64): " << fa
                                   << " of the 1e-10 relative bound");
    }
  };
  BOOST_TEST_REQUIRE(c.mask == (Case::mask == golden_mask::none          ? "none"
                                : Case::mask == golden_mask::causal      ? "causal"
                                : Case::mask == golden_mask::key_padding ? "key_padding"
                                                                         : "both"));
  auto run = [&](const auto& m) {
    if constexpr (Case::mask == golden_mask::none) check(m.forward(x_q, x_k, x_v));
    if constexpr (Case::mask == golden_mask::causal) check(m.forward(x_q, x_k, x_v, causal));
    if constexpr (Case::mask == golden_mask::key_padding)
      check(m.forward(x_q, x_k, x_v, ignore_keys(padding)));
    if constexpr (Case::mask == golden_mask::both)
      check(m.forward(x_q, x_k, x_v, causal, ignore_keys(padding)));
  };
  run(mha);
  which = " (prepacked)";
  run(served);
}

}  // namespace argus::test
