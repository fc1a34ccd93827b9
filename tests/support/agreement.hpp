// tests/support/agreement.hpp -- test support: how the differential test and the fuzzer
// hold an evaluator's attention output to the double reference (docs/reliability.md).
// No Boost.Test here: the fuzzer includes it too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>

namespace argus::test {

/// max |x| over the finite elements of t (0 when there are none).
template <class Tensor>
double max_abs_finite(const Tensor& t) {
  double m = 0;
  for (auto x : t)
    if (std::isfinite(double(x))) m = std::max(m, std::abs(double(x)));
  return m;
}

/// The tolerance for attention outputs computed in T from q (B,H,SQ,DK), k (B,G,SKV,DK),
/// v and an additive mask whose largest finite magnitude is max_add, with scale 1/sqrt(d_k):
/// a logit's rounding error is at most u (d_k + 2) |scale| sum_c |q_c k_c| + 2u |a| (bounded
/// over every (query, key) pair); a weight then carries about three times that as relative
/// error (its exponential and the normalising sum), and the weighted sum adds
/// u (seq_kv + d_v + 16) max|v| (products, sums and the exponentials' few ulp).
/// q, k and v are tensors (row-major: their rows are read through data(), the same O(n^2 d)
/// loop as attention itself, which through checked element access took a third of
/// unit.eval.differential's run time).
template <class T, class Q, class K, class V>
double attention_tolerance(const Q& q, const K& k, const V& v, double max_add) {
  const std::size_t batch = q.extent(0), heads = q.extent(1), sq = q.extent(2), dk = q.extent(3);
  const std::size_t kv_heads = k.extent(1), skv = k.extent(2), dv = v.extent(3);
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double scale = 1.0 / std::sqrt(double(dk));
  double logit_bound = 0;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < sq; ++i) {
        const auto* qi = q.data() + ((b * heads + h) * sq + i) * dk;
        const auto* kh = k.data() + (b * kv_heads + h / (heads / kv_heads)) * skv * dk;
        for (std::size_t j = 0; j < skv; ++j) {
          const auto* kj = kh + j * dk;
          double s = 0;
          for (std::size_t c = 0; c < dk; ++c) s += std::abs(double(qi[c]) * double(kj[c]));
          if (std::isfinite(s)) logit_bound = std::max(logit_bound, scale * s);
        }
      }
  const double delta = u * (double(dk + 2) * logit_bound + 2 * max_add + 4);
  return max_abs_finite(v) * (3 * delta + u * double(skv + dv + 16)) +
         64 * double(std::numeric_limits<T>::denorm_min());
}

/// Compares an evaluator's result with the reference's, element by element: the same
/// elements must be finite (NaN and infinities are not told apart: whether 0 · inf or a
/// rescaled inf shows first depends on the order of the sums), and finite ones must lie
/// within tol. Returns an empty string when they agree, else what differs.
template <class G, class R>
std::string disagreement(const G& got, const R& ref, double tol) {
  std::size_t finite_mismatch = 0, value_mismatch = 0, first = got.size();
  double worst = 0;
  for (std::size_t n = 0; n < got.size(); ++n) {
    const double x = double(got.data()[n]), y = double(ref.data()[n]);
    if (std::isfinite(x) != std::isfinite(y)) {
      if (finite_mismatch++ == 0 && value_mismatch == 0) first = n;
      continue;
    }
    if (!std::isfinite(y)) continue;
    const double d = std::abs(x - y);
    if (d > tol) {
      if (value_mismatch++ == 0 && finite_mismatch == 0) first = n;
      worst = std::max(worst, d);
    }
  }
  if (finite_mismatch == 0 && value_mismatch == 0) return {};
  std::ostringstream s;
  s << finite_mismatch << " outputs finite where the reference's are not (or the reverse), "
    << value_mismatch << " further than " << tol << " from it (worst " << worst
    << "); first at flat index " << first << ": " << double(got.data()[first]) << ", reference "
    << double(ref.data()[first]);
  return s.str();
}

}  // namespace argus::test
