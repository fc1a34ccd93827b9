// tests/support/grad_agreement.hpp -- test support: the attention core's output and gradients
// by the rules of docs/reference/semantics.md (1-9), in double, with a bound on how far an
// evaluator computing in T may lie from each element (docs/reliability.md). The gradient
// fuzzer (tests/fuzz/gradient_fuzzer.cpp) and unit.grad.differential hold forward_for_training
// and backward to it. No Boost.Test here.
#pragma once

#include <argus/kernel/dropout.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

// The fuzzer's coverage instrumentation (a callback at every comparison) would make the
// reference's loops most of its time and add nothing to what it learns about argus.
#if defined(__clang__)
#define ARGUS_TEST_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define ARGUS_TEST_NO_COVERAGE
#endif

namespace argus::test {

/// A flat array of values, each with its error bound.
struct bounded_values {
  std::vector<double> value, bound;
  explicit bounded_values(std::size_t n = 0) : value(n, 0.0), bound(n, 0.0) {}
};

/// The masks of a core (null / false: not used), as the expression chains them.
template <class T>
struct core_masks {
  bool causal = false;
  const std::uint8_t* pad = nullptr;  // (B, SEQ_KV): key j of item b ignored
  const bool* pairs = nullptr;        // (SEQ_Q, SEQ_KV): pair ignored
  const T* add = nullptr;             // (SEQ_Q, SEQ_KV): added to the logit
};

/// out (B,H,SQ,DV), dq (B,H,SQ,DK), dk (B,G,SKV,DK), dv (B,G,SKV,DV) by the rules, from
/// row-major q, k, v, dout (the same layouts), with dropout (rate 0: none), each element
/// with a bound on the error of a T evaluator.
///
/// The bound follows the computation: a logit of row i is off by at most
/// delta_i = u ((d_k + 2) scale max_j Σ_c |q_c k_c| + 2 max_j |a_ij| + 4), so a weight carries
/// a relative error of at most rho_i = e^(3 delta_i) − 1 + u (seq_kv + 16) (its exponential,
/// the row's maximum and its sum) plus 4 times T's least normal number absolute (the fused
/// evaluator's exponential gives exactly 0 below it, kernel/flash_micro_kernels.hpp); every
/// sum of n products adds u (n + 16) times the sum of the magnitudes of its terms, and every
/// product may lose a denorm_min to underflow (d_v + 1 of them in dP_ij); dS_ij = P_ij (dP_ij
/// − D_i) carries P_ij's error over |dP_ij| + |D_i| and P_ij times D_i's error. The bound is
/// what an evaluator may not exceed, not an estimate: 4 times it is the tolerance.
template <class T>
struct core_gradients {
  bounded_values out, dq, dk, dv;

  ARGUS_TEST_NO_COVERAGE core_gradients(std::size_t nb, std::size_t heads, std::size_t kv_heads,
                                        std::size_t sq, std::size_t skv, std::size_t d_k,
                                        std::size_t d_v, const T* q, const T* k, const T* v,
                                        const T* dout, const core_masks<T>& masks,
                                        double dropout_rate, std::uint64_t dropout_seed)
      : out(nb * heads * sq * d_v),
        dq(nb * heads * sq * d_k),
        dk(nb * kv_heads * skv * d_k),
        dv(nb * kv_heads * skv * d_v) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const double u = std::numeric_limits<T>::epsilon() / 2;
    const double tiny = double(std::numeric_limits<T>::denorm_min());
    const double smallest = double(std::numeric_limits<T>::min());  // the least normal number
    const double scale = 1.0 / std::sqrt(double(d_k));
    const std::size_t group = kv_heads == 0 ? 1 : heads / kv_heads;
    const double sum_u = u * double(skv + sq * group + d_k + d_v + 16);  // any sum's rounding
    const double dp_underflow = double(d_v + 1) * tiny;  // dP_ij's products lost to underflow
    const kernel::attention_dropout<T> drop(T(dropout_rate), dropout_seed);
    std::vector<double> logit(skv), w(skv), werr(skv), z(skv), dp(skv), mag_dp(skv);
    std::vector<char> ignored(skv);
    auto at = [](const T* x, std::size_t row, std::size_t width, std::size_t c) {
      return double(x[row * width + c]);
    };
    for (std::size_t b = 0; b < nb; ++b)
      for (std::size_t h = 0; h < heads; ++h) {
        const std::size_t g = h / group;
        for (std::size_t i = 0; i < sq; ++i) {
          const std::size_t qi = (b * heads + h) * sq + i;  // row of q, dout, out, dq
          // Logits (rules 1-2) and their error bound.
          double m = -inf, logit_mag = 0, add_mag = 0;
          bool poisoned = false;
          for (std::size_t j = 0; j < skv; ++j) {
            const std::size_t kj = (b * kv_heads + g) * skv + j;
            double s = 0, mag = 0;
            for (std::size_t c = 0; c < d_k; ++c) {
              s += at(q, qi, d_k, c) * at(k, kj, d_k, c);
              mag += std::abs(at(q, qi, d_k, c) * at(k, kj, d_k, c));
            }
            s *= scale;
            const double a = masks.add ? double(masks.add[i * skv + j]) : 0.0;
            s += a;
            const bool boolean = (masks.causal && j > i) || (masks.pad && masks.pad[b * skv + j]) ||
                                 (masks.pairs && masks.pairs[i * skv + j]);
            if (boolean) s = -inf;
            // An additive -inf ignores the pair when it leaves the logit -inf; NaN + -inf is a
            // NaN logit (rule 2), which makes the row NaN (rule 3) and is no ignored pair.
            ignored[j] = boolean || (a == -inf && s == -inf);
            logit[j] = s;
            if (!boolean && std::isfinite(scale * mag))
              logit_mag = std::max(logit_mag, scale * mag);
            if (!boolean && std::isfinite(a)) add_mag = std::max(add_mag, std::abs(a));
            if (std::isnan(s) || s == inf)
              poisoned = true;
            else
              m = std::max(m, s);
          }
          const double delta = u * (double(d_k + 2) * logit_mag + 2 * add_mag + 4);
          const double rho = std::expm1(3 * delta) + u * double(skv + 16);
          // Weights (rules 3-5), dropout factors.
          double sum = 0;
          for (std::size_t j = 0; j < skv; ++j) {
            w[j] = poisoned    ? std::numeric_limits<double>::quiet_NaN()
                   : m == -inf ? 0.0
                               : std::exp(logit[j] - m);
            sum += w[j];
          }
          for (std::size_t j = 0; j < skv; ++j) {
            if (!poisoned && m != -inf) w[j] /= sum;
            werr[j] = rho * std::abs(w[j]) + 4 * smallest;
            z[j] = !drop.active() ? 1.0 : drop.keeps(b, h, i, j) ? double(drop.keep_scale()) : 0.0;
          }
          // The output (rules 6-7) and D_i over the pairs no mask ignores (rule 9).
          double d = 0, d_mag = 0, d_err = 0;
          for (std::size_t j = 0; j < skv; ++j) {
            if (ignored[j]) continue;
            const std::size_t kj = (b * kv_heads + g) * skv + j;
            dp[j] = 0, mag_dp[j] = 0;
            for (std::size_t c = 0; c < d_v; ++c) {
              dp[j] += at(dout, qi, d_v, c) * at(v, kj, d_v, c);
              mag_dp[j] += std::abs(at(dout, qi, d_v, c) * at(v, kj, d_v, c));
            }
            d += w[j] * z[j] * dp[j];
            d_mag += std::abs(w[j]) * z[j] * mag_dp[j];
            d_err += (werr[j] + sum_u * std::abs(w[j])) * z[j] * mag_dp[j] +
                     std::abs(w[j]) * z[j] * dp_underflow;
            for (std::size_t c = 0; c < d_v; ++c) {
              out.value[qi * d_v + c] += w[j] * z[j] * at(v, kj, d_v, c);
              out.bound[qi * d_v + c] +=
                  (werr[j] + sum_u * std::abs(w[j])) * z[j] * std::abs(at(v, kj, d_v, c)) + tiny;
            }
          }
          // Rule 9: the same pairs, and only they, carry the gradients.
          for (std::size_t j = 0; j < skv; ++j) {
            if (ignored[j]) continue;
            const std::size_t kj = (b * kv_heads + g) * skv + j;
            const double ds = w[j] * (z[j] * dp[j] - d);
            const double ds_err = (werr[j] + sum_u * std::abs(w[j])) * (z[j] * mag_dp[j] + d_mag) +
                                  std::abs(w[j]) * (z[j] * dp_underflow + d_err) +
                                  sum_u * std::abs(ds) + tiny;
            for (std::size_t c = 0; c < d_v; ++c) {
              dv.value[kj * d_v + c] += w[j] * z[j] * at(dout, qi, d_v, c);
              dv.bound[kj * d_v + c] +=
                  (werr[j] + sum_u * std::abs(w[j])) * z[j] * std::abs(at(dout, qi, d_v, c)) + tiny;
            }
            for (std::size_t c = 0; c < d_k; ++c) {
              dq.value[qi * d_k + c] += scale * ds * at(k, kj, d_k, c);
              dq.bound[qi * d_k + c] += scale * ds_err * std::abs(at(k, kj, d_k, c)) + tiny;
              dk.value[kj * d_k + c] += scale * ds * at(q, qi, d_k, c);
              dk.bound[kj * d_k + c] += scale * ds_err * std::abs(at(q, qi, d_k, c)) + tiny;
            }
          }
        }
      }
  }
};

/// Compares a T evaluator's flat result with the rules' values: the same elements must be
/// finite (NaN and infinities are not told apart, as in disagreement()), and a finite one
/// must lie within 4 times its bound. A bound is NaN only where one of its terms is infinite
/// times 0 (a weight whose logit error is unbounded, against a zero): it is infinite then.
/// Returns an empty string when they agree, else what differs.
template <class Tensor>
ARGUS_TEST_NO_COVERAGE std::string bounded_disagreement(const char* name, const Tensor& got,
                                                        const bounded_values& want) {
  if (got.size() != want.value.size()) {
    std::ostringstream s;
    s << name << ": " << got.size() << " elements, the rules give " << want.value.size();
    return s.str();
  }
  for (std::size_t n = 0; n < got.size(); ++n) {
    const double x = double(got.data()[n]), y = want.value[n];
    const double tol =
        std::isnan(want.bound[n]) ? std::numeric_limits<double>::infinity() : 4 * want.bound[n];
    const bool bad =
        std::isfinite(x) != std::isfinite(y) || (std::isfinite(y) && std::abs(x - y) > tol);
    if (bad) {
      std::ostringstream s;
      s.precision(9);
      s << name << "[" << n << "] = " << x << ", the rules give " << y << " within " << tol;
      return s.str();
    }
  }
  return {};
}

}  // namespace argus::test
