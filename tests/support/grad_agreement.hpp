// tests/support/grad_agreement.hpp -- test support: the attention core's output and gradients
// by the rules of docs/reference/semantics.md (1-9), and a module's (rule 10 around them), in
// double, with a bound on how far an evaluator computing in T may lie from each element
// (docs/reliability.md). The gradient fuzzer (tests/fuzz/gradient_fuzzer.cpp: core and module)
// and unit.grad.differential (core) hold forward_for_training and backward to it. No
// Boost.Test here.
#pragma once

#include <argus/kernel/dropout.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
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
  std::ptrdiff_t causal_offset = 0;  // under causal, key j ignored by query i iff j > i + offset
  std::size_t causal_window = std::numeric_limits<std::size_t>::max();  // or j <= i + offset - w
  const std::uint8_t* pad = nullptr;  // (B, SEQ_KV): key j of item b ignored
  const bool* pairs = nullptr;        // (SEQ_Q, SEQ_KV): pair ignored
  const T* add = nullptr;             // (SEQ_Q, SEQ_KV): added to the logit
};

/// out (B,H,SQ,DV), dq (B,H,SQ,DK), dk (B,G,SKV,DK), dv (B,G,SKV,DV) by the rules, from
/// row-major q, k, v, dout (the same layouts), with dropout (rate 0: none), each element
/// with a bound on the error of a T evaluator. dout null: the output alone (the gradients
/// stay 0).
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
            const auto diagonal = static_cast<std::ptrdiff_t>(i) + masks.causal_offset;
            const bool past =
                masks.causal && (static_cast<std::ptrdiff_t>(j) > diagonal ||
                                 (masks.causal_window != std::numeric_limits<std::size_t>::max() &&
                                  static_cast<std::ptrdiff_t>(j) <=
                                      diagonal - static_cast<std::ptrdiff_t>(masks.causal_window)));
            const bool boolean = past || (masks.pad && masks.pad[b * skv + j]) ||
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
            for (std::size_t c = 0; dout != nullptr && c < d_v; ++c) {
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
          for (std::size_t j = 0; dout != nullptr && j < skv; ++j) {
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

/// e · x for an error bound e (perhaps infinite) and a magnitude x: an exact 0 stays 0.
inline double scaled_bound(double e, double x) { return x == 0 ? 0.0 : e * x; }

/// y (m × n) = Σ_t a(i, t) · b(t, j) [+ c[j]] in double, each element with the bound of a T
/// evaluator that is handed a and b within their bounds and sums in any order: every term's
/// error from its factors' (a's error times |b|, b's times |a|, and their product), u (k + 16)
/// times the sum of the terms' magnitudes, and a denorm_min per product lost to underflow.
/// a(i, t) and b(t, j) return {value, bound}.
template <class T, class A, class B>
ARGUS_TEST_NO_COVERAGE bounded_values product(std::size_t m, std::size_t n, std::size_t k, A a, B b,
                                              const T* c) {
  const double u = std::numeric_limits<T>::epsilon() / 2, sum_u = u * double(k + 16);
  const double underflow = double(k + 1) * double(std::numeric_limits<T>::denorm_min());
  bounded_values y(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double v = c ? double(c[j]) : 0.0, err = 0, mag = c ? std::abs(double(c[j])) : 0.0;
      for (std::size_t t = 0; t < k; ++t) {
        const auto [av, ae] = a(i, t);
        const auto [bv, be] = b(t, j);
        v += av * bv;
        const double e =
            scaled_bound(ae, std::abs(bv)) + scaled_bound(be, std::abs(av)) + scaled_bound(ae, be);
        err += e;
        mag += std::abs(av * bv) + e;  // what the evaluator's own product may reach
      }
      y.value[i * n + j] = v;
      y.bound[i * n + j] = err + sum_u * mag + underflow;
    }
  return y;
}

/// A multi_head_attention module's output and the gradients of every input and parameter by
/// the rules (1-10), in double, each element with a bound, for row-major inputs x_q
/// (B,SQ,D_MODEL), x_k (B,SKV,KDIM), x_v (B,SKV,VDIM) and dout (B,SQ,D_MODEL) on which the
/// projections into the core, Q = x_q·W_q + b_q (and K, V) and dA = dout·W_oᵀ, are exact in
/// T: the caller's inputs make them so (the gradient fuzzer's few-bit dyadic values), so that
/// the core's inputs are exactly what core_gradients takes. Its bounds then carry over to
/// out = A·W_o + b_o, dW_o = Aᵀ·dout, and dx = dQ·W_qᵀ, dW_q = x_qᵀ·dQ, db_q = Σ dQ (and
/// the same for K and V) by product(). Without biases the bias members stay empty; with
/// `output_only` (the forward fuzzer's modules; dout unused), every gradient does.
template <class T, class M>
struct module_gradients {
  bounded_values out, x_q, x_k, x_v, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;

  ARGUS_TEST_NO_COVERAGE module_gradients(const M& m, std::size_t nb, std::size_t sq,
                                          std::size_t skv, const T* xq, const T* xk, const T* xv,
                                          const T* dout, const core_masks<T>& masks,
                                          double dropout_rate, std::uint64_t dropout_seed,
                                          bool output_only = false) {
    constexpr std::size_t H = M::heads, G = M::kv_heads, DK = M::d_k, DV = M::d_v;
    constexpr std::size_t D = M::d_model, KD = M::kdim, VD = M::vdim;
    constexpr std::size_t hk = H * DK, gk = G * DK, gv = G * DV, hv = H * DV;
    const std::size_t rq = nb * sq, rkv = nb * skv;
    using entry = std::pair<double, double>;
    const auto exact = [](const T* p, std::size_t ld) {
      return [p, ld](std::size_t i, std::size_t j) { return entry{double(p[i * ld + j]), 0.0}; };
    };
    const auto exact_t = [](const T* p, std::size_t ld) {  // the transpose of p (rows of ld)
      return [p, ld](std::size_t i, std::size_t j) { return entry{double(p[j * ld + i]), 0.0}; };
    };
    const auto ones = [](std::size_t, std::size_t) { return entry{1.0, 0.0}; };
    const T *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
    if constexpr (M::has_bias)
      bq = m.b_q.data(), bk = m.b_k.data(), bv = m.b_v.data(), bo = m.b_o.data();

    // The core's inputs, exact, in head-major layouts.
    const auto head_major = [](const bounded_values& x, std::size_t n, std::size_t heads,
                               std::size_t d, std::size_t batch) {
      std::vector<T> y(x.value.size());
      for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t c = 0; c < d; ++c)
              y[((b * heads + h) * n + i) * d + c] =
                  T(x.value[(b * n + i) * heads * d + h * d + c]);
      return y;
    };
    const auto q =
        head_major(product<T>(rq, hk, D, exact(xq, D), exact(m.w_q.data(), hk), bq), sq, H, DK, nb);
    const auto k = head_major(product<T>(rkv, gk, KD, exact(xk, KD), exact(m.w_k.data(), gk), bk),
                              skv, G, DK, nb);
    const auto v = head_major(product<T>(rkv, gv, VD, exact(xv, VD), exact(m.w_v.data(), gv), bv),
                              skv, G, DV, nb);
    const auto d_a =
        output_only ? std::vector<T>()
                    : head_major(product<T>(rq, hv, D, exact(dout, D), exact_t(m.w_o.data(), D),
                                            static_cast<const T*>(nullptr)),
                                 sq, H, DV, nb);
    const core_gradients<T> core(nb, H, G, sq, skv, DK, DV, q.data(), k.data(), v.data(),
                                 output_only ? nullptr : d_a.data(), masks, dropout_rate,
                                 dropout_seed);

    // The core's results read in the merged layout (rows b·n + i, columns h·d + c).
    const auto merged = [](const bounded_values& x, std::size_t n, std::size_t heads,
                           std::size_t d) {
      return [&x, n, heads, d](std::size_t r, std::size_t col) {
        const std::size_t e = ((r / n * heads + col / d) * n + r % n) * d + col % d;
        return entry{x.value[e], x.bound[e]};
      };
    };
    const auto transposed = [](auto f) {
      return [f](std::size_t i, std::size_t j) { return f(j, i); };
    };
    const T* none = nullptr;
    const auto a = merged(core.out, sq, H, DV);
    out = product<T>(rq, D, hv, a, exact(m.w_o.data(), D), bo);
    if (output_only) return;
    w_o = product<T>(hv, D, rq, transposed(a), exact(dout, D), none);
    const auto d_q = merged(core.dq, sq, H, DK);
    const auto d_k = merged(core.dk, skv, G, DK);
    const auto d_v = merged(core.dv, skv, G, DV);
    x_q = product<T>(rq, D, hk, d_q, exact_t(m.w_q.data(), hk), none);
    x_k = product<T>(rkv, KD, gk, d_k, exact_t(m.w_k.data(), gk), none);
    x_v = product<T>(rkv, VD, gv, d_v, exact_t(m.w_v.data(), gv), none);
    w_q = product<T>(D, hk, rq, exact_t(xq, D), d_q, none);
    w_k = product<T>(KD, gk, rkv, exact_t(xk, KD), d_k, none);
    w_v = product<T>(VD, gv, rkv, exact_t(xv, VD), d_v, none);
    if constexpr (M::has_bias) {
      b_o = product<T>(1, D, rq, ones, exact(dout, D), none);
      b_q = product<T>(1, hk, rq, ones, d_q, none);
      b_k = product<T>(1, gk, rkv, ones, d_k, none);
      b_v = product<T>(1, gv, rkv, ones, d_v, none);
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
