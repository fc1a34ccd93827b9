// argus/eval/reference.hpp -- evaluation layer: the plain double-precision reference.
//
//     argus::tensor<double, S> r = argus::evaluate_reference(expr);
//
// Straight loops in double over every node, written for obviousness rather than speed,
// and sharing no code with the unfused or fused evaluators: tests compare both against it.
// Masked logits are -infinity; a row whose logits are all -infinity is all zeros, a row
// with a NaN or +infinity logit is all NaN, and a key a mask ignores adds nothing to the
// weighted sum (docs/reference/semantics.md).
#pragma once

#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace argus {
namespace detail::reference {

/// A dense row-major double array of rank R.
template <std::size_t R>
struct value {
  std::array<std::size_t, R> ext{};
  std::vector<double> data;
  std::size_t index(const std::array<std::size_t, R>& c) const {
    std::size_t off = 0;
    for (std::size_t i = 0; i < R; ++i) off = off * ext[i] + c[i];
    return off;
  }
  template <class... I>
  double& at(I... i) {
    return data[index({std::size_t(i)...})];
  }
  template <class... I>
  double at(I... i) const {
    return data[index({std::size_t(i)...})];
  }
  // The innermost row at the leading coordinates i... (R - 1 of them), for the inner loops:
  // at() there, not inlined at -Og, was a quarter of unit.eval.differential's time.
  template <class... I>
  const double* row(I... i) const {
    static_assert(sizeof...(I) + 1 == R);
    return data.data() + index({std::size_t(i)..., 0});
  }
  template <class... I>
  double* row(I... i) {
    static_assert(sizeof...(I) + 1 == R);
    return data.data() + index({std::size_t(i)..., 0});
  }
};

template <std::size_t R>
value<R> make(const std::array<std::size_t, R>& ext) {
  std::size_t n = 1;
  for (auto e : ext) n *= e;
  return {ext, std::vector<double>(n, 0.0)};
}

struct evaluator {
  template <class T, Shape S>
  static value<S::rank()> eval(const leaf<T, S>& e) {
    check_leaf_storage("argus::evaluate_reference", e);
    value<S::rank()> r = make<S::rank()>(e.view.shape().extents());
    if (e.view.layout().is_row_major()) {  // most leaves: one pass, no coordinates
      std::copy(e.view.data(), e.view.data() + r.data.size(), r.data.begin());
      return r;
    }
    std::array<std::size_t, S::rank()> c{};
    for (std::size_t n = 0; n < r.data.size(); ++n) {
      std::size_t off = 0;
      for (std::size_t i = 0; i < S::rank(); ++i) off += c[i] * e.view.stride(i);
      r.data[n] = static_cast<double>(e.view.data()[off]);
      for (std::size_t i = S::rank(); i-- > 0;) {  // next coordinate, row-major order
        if (++c[i] < r.ext[i]) break;
        c[i] = 0;
      }
    }
    return r;
  }

  template <class X, class W, class B>
  static value<projection<X, W, B>::shape_type::rank()> eval(const projection<X, W, B>& e) {
    using node = projection<X, W, B>;
    const auto x = eval(e.x);
    const auto w = eval(e.w);
    auto r = make<node::shape_type::rank()>(e.shape().extents());
    std::vector<double> bias;
    if constexpr (node::has_bias) bias = eval(e.b).data;
    if constexpr (!node::per_head) {
      for (std::size_t b = 0; b < r.ext[0]; ++b)
        for (std::size_t s = 0; s < r.ext[1]; ++s) {
          const double* xr = x.row(b, s);
          for (std::size_t j = 0; j < r.ext[2]; ++j) {
            double acc = bias.empty() ? 0.0 : bias[j];
            const double* wj = w.data.data() + j;  // column j, stride r.ext[2]
            for (std::size_t p = 0; p < x.ext[2]; ++p) acc += xr[p] * wj[p * r.ext[2]];
            r.at(b, s, j) = acc;
          }
        }
    } else {
      for (std::size_t b = 0; b < r.ext[0]; ++b)
        for (std::size_t h = 0; h < r.ext[1]; ++h)
          for (std::size_t s = 0; s < r.ext[2]; ++s) {
            const double* xr;
            if constexpr (node::split_input)
              xr = x.row(b, h, s);
            else
              xr = x.row(b, s);
            const double* wh = w.row(h, 0);  // head h's weight, d_in x r.ext[3]
            for (std::size_t j = 0; j < r.ext[3]; ++j) {
              double acc = bias.empty() ? 0.0 : bias[h * r.ext[3] + j];
              const double* wj = wh + j;  // its column j, stride r.ext[3]
              for (std::size_t p = 0; p < w.ext[1]; ++p) acc += xr[p] * wj[p * r.ext[3]];
              r.at(b, h, s, j) = acc;
            }
          }
    }
    return r;
  }

  template <std::size_t H, class X>
  static value<4> eval(const split_heads_node<H, X>& e) {
    const auto x = eval(e.x);
    auto r = make<4>(e.shape().extents());
    for (std::size_t b = 0; b < r.ext[0]; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t s = 0; s < r.ext[2]; ++s)
          for (std::size_t j = 0; j < r.ext[3]; ++j)
            r.at(b, h, s, j) = x.at(b, s, h * r.ext[3] + j);
    return r;
  }

  template <class X>
  static value<3> eval(const merge_heads_node<X>& e) {
    const auto x = eval(e.x);
    auto r = make<3>(e.shape().extents());
    for (std::size_t b = 0; b < x.ext[0]; ++b)
      for (std::size_t h = 0; h < x.ext[1]; ++h)
        for (std::size_t s = 0; s < x.ext[2]; ++s)
          for (std::size_t j = 0; j < x.ext[3]; ++j)
            r.at(b, s, h * x.ext[3] + j) = x.at(b, h, s, j);
    return r;
  }

  template <class Q, class K>
  static value<4> eval(const scores_node<Q, K>& e) {
    const auto q = eval(e.q);
    const auto k = eval(e.k);
    auto r = make<4>(e.shape().extents());
    const std::size_t group = q.ext[1] / k.ext[1];
    for (std::size_t b = 0; b < r.ext[0]; ++b)
      for (std::size_t h = 0; h < r.ext[1]; ++h)
        for (std::size_t i = 0; i < r.ext[2]; ++i) {
          const double* qi = q.row(b, h, i);
          // Rows by pointer (row() and at() per pair, not inlined at -Og, were most of the
          // time of the tests that call evaluate_reference).
          const double* kh = k.row(b, h / group, 0);
          double* out = r.row(b, h, i);
          for (std::size_t j = 0; j < r.ext[3]; ++j) {
            const double* kj = kh + j * q.ext[3];
            double acc = 0;
            for (std::size_t p = 0; p < q.ext[3]; ++p) acc += qi[p] * kj[p];
            out[j] = acc * static_cast<double>(e.scale);
          }
        }
    return r;
  }

  // What a mask kind says of pair (i, j) of head h of item b, read from its definition.
  template <class M>
  static bool ignored(const M& m, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
    if constexpr (boolean_mask_kind<M>)
      return m.ignores(b, h, i, j);
    else
      return false;
  }
  template <class M>
  static double added(const M& m, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
    if constexpr (additive_mask_kind<M>)
      return static_cast<double>(m.added(b, h, i, j));
    else
      return 0.0;
  }

  template <class E, class M>
  static value<4> eval(const masked_node<E, M>& e) {
    check_mask_storage(e.mask);
    auto r = eval(e.scores);
    for (std::size_t b = 0; b < r.ext[0]; ++b)
      for (std::size_t h = 0; h < r.ext[1]; ++h)
        for (std::size_t i = 0; i < r.ext[2]; ++i)
          for (std::size_t j = 0; j < r.ext[3]; ++j) {
            // A boolean mask anywhere in the chain wins over an additive one, in any order.
            double& x = r.at(b, h, i, j);
            x = boolean_ignored(e, b, h, i, j) ? -std::numeric_limits<double>::infinity()
                                               : x + added(e.mask, b, h, i, j);
          }
    return r;
  }

  template <class E>
  static value<4> eval(const softmax_node<E>& e) {
    auto r = eval(e.scores);
    const std::size_t n = r.ext[3];
    for (std::size_t row = 0; row * n < r.data.size(); ++row) {
      double* x = r.data.data() + row * n;
      bool poisoned = false;  // a NaN or +infinity logit: the row is NaN
      for (std::size_t j = 0; j < n; ++j)
        poisoned = poisoned || std::isnan(x[j]) || x[j] == HUGE_VAL;
      if (poisoned) {
        for (std::size_t j = 0; j < n; ++j) x[j] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < n; ++j) m = std::max(m, x[j]);
      if (m == -std::numeric_limits<double>::infinity()) {
        for (std::size_t j = 0; j < n; ++j) x[j] = 0.0;
        continue;
      }
      double sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] - m));
      for (std::size_t j = 0; j < n; ++j) x[j] /= sum;
    }
    return r;
  }

  template <class E>
  static bool boolean_ignored(const E&, std::size_t, std::size_t, std::size_t, std::size_t) {
    return false;
  }
  template <class E, class M>
  static bool boolean_ignored(const masked_node<E, M>& e, std::size_t b, std::size_t h,
                              std::size_t i, std::size_t j) {
    return ignored(e.mask, b, h, i, j) || boolean_ignored(e.scores, b, h, i, j);
  }

  // Whether the mask chain of a softmax's operand ignores key j for query i of item b.
  template <class E>
  static bool chain_ignored(const E&, std::size_t, std::size_t, std::size_t, std::size_t) {
    return false;
  }
  template <class E, class M>
  static bool chain_ignored(const masked_node<E, M>& e, std::size_t b, std::size_t h, std::size_t i,
                            std::size_t j) {
    return ignored(e.mask, b, h, i, j) || added(e.mask, b, h, i, j) == -HUGE_VAL ||
           chain_ignored(e.scores, b, h, i, j);
  }

  template <class P, class V>
  static value<4> eval(const attend_node<P, V>& e) {
    return weighted_sum(e,
                        [](std::size_t, std::size_t, std::size_t, std::size_t) { return false; });
  }
  template <class S, class V>
  static value<4> eval(const attend_node<softmax_node<S>, V>& e) {
    return weighted_sum(e, [&e](std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
      return chain_ignored(e.weights.scores, b, h, i, j);
    });
  }

  template <class P, class V, class Ignored>
  static value<4> weighted_sum(const attend_node<P, V>& e, const Ignored& key_ignored) {
    const auto p = eval(e.weights);
    const auto v = eval(e.v);
    auto r = make<4>(e.shape().extents());
    const std::size_t group = p.ext[1] / v.ext[1];
    const std::size_t keys = p.ext[3];
    std::vector<char> taken(keys);  // per key of row (b, h, i): whether it enters the sum
    for (std::size_t b = 0; b < r.ext[0]; ++b)
      for (std::size_t h = 0; h < r.ext[1]; ++h)
        for (std::size_t i = 0; i < r.ext[2]; ++i) {
          const double* pi = p.row(b, h, i);
          // A NaN weight is a NaN row (a NaN or +inf logit): it reaches every column.
          for (std::size_t k = 0; k < keys; ++k)
            taken[k] = !key_ignored(b, h, i, k) || std::isnan(pi[k]);
          // V of head h, keys x d_v (no row 0 without keys).
          // Row by row of V (was column by column, a stride of d_v; each sum still adds its
          // terms in key order, so the result is the same to the bit).
          const double* vh = keys == 0 ? nullptr : v.row(b, h / group, 0);
          double* out = r.row(b, h, i);
          for (std::size_t k = 0; k < keys; ++k)
            if (taken[k])
              for (std::size_t j = 0; j < r.ext[3]; ++j) out[j] += pi[k] * vh[k * r.ext[3] + j];
        }
    return r;
  }
};

}  // namespace detail::reference

/// The value of e computed in double precision with plain loops, for tests. Anything but an
/// expression does not compile (argument_is_an_expression); a rejected expression (its error
/// already reported) gives nothing, silently.
template <class E>
auto evaluate_reference(const E& e) {
  if constexpr (detail::any_rejected<E>) {
    (void)e;
    return detail::rejected{};
  } else if constexpr (!argument_is_an_expression<E>) {
    static_assert(argument_is_an_expression<E>,
                  "argument_is_an_expression: argus::evaluate_reference(e) computes an "
                  "expression (built by project, scores, forward, ...), not a tensor");
    return detail::rejected{};
  } else {
    const auto v = detail::reference::evaluator::eval(e);
    tensor<double, typename E::shape_type> out(e.shape());
    std::copy(v.data.begin(), v.data.end(), out.data());
    return out;
  }
}

}  // namespace argus
