// labels: threads memory
// sanitized-options: -O1
// Dropout on the attention weights (kernel/dropout.hpp): Philox4x32-10 against Random123's
// known answers; the decisions' statistics; flash_attention and attention_unfused against a
// reference in double that asks keeps() for every weight on its own; the fused and unfused
// backward against the reference's gradients, which central finite differences check in
// turn; rate 0 and rate 1; the same decisions on 1-3 threads, in the prefill and the decode
// (keys split over threads) paths.
#include "argus/kernel/dropout.hpp"

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/parallel.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using argus::kernel::attention_dropout;
using argus::kernel::attention_problem;
using argus::kernel::philox4x32_10;
using u32x4 = std::array<std::uint32_t, 4>;

// Random123's kat_vectors for philox4x32_10: (counter, key) -> block.
static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
              u32x4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
static_assert(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                            {0xffffffff, 0xffffffff}) ==
              u32x4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
static_assert(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                            {0xa4093822, 0x299f31d0}) ==
              u32x4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});

struct config {
  std::size_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_kv = 1, d_k = 4, d_v = 4;
  bool causal = false;
  bool padding = false;  // a key_ignore mask, about a quarter of the keys
  double rate = 0.25;
  std::uint64_t seed = 0x0123456789abcdefULL;
  std::size_t threads = 1;

  std::string describe() const {
    std::ostringstream s;
    s << "B=" << batch << " h=" << heads << "/" << kv_heads << " n_q=" << seq_q
      << " n_kv=" << seq_kv << " d_k=" << d_k << " d_v=" << d_v << (causal ? " causal" : "")
      << (padding ? " padding" : "") << " rate=" << rate << " threads=" << threads;
    return s.str();
  }
};

/// Inputs (B,H,S,D) row-major, uniform in [-1, 1], and the problem over them.
template <class T>
struct instance {
  config c;
  std::vector<T> q, k, v, o, lse, d_o;
  std::vector<std::uint8_t> pad;

  instance(const config& cfg, std::uint64_t draw) : c(cfg) {
    std::mt19937_64 g(draw);
    auto unit = [&] {
      return static_cast<T>(2 * (static_cast<double>(g() >> 11) * 0x1.0p-53) - 1);
    };
    q.resize(c.batch * c.heads * c.seq_q * c.d_k);
    k.resize(c.batch * c.kv_heads * c.seq_kv * c.d_k);
    v.resize(c.batch * c.kv_heads * c.seq_kv * c.d_v);
    d_o.resize(c.batch * c.heads * c.seq_q * c.d_v);
    for (auto* x : {&q, &k, &v, &d_o})
      for (T& e : *x) e = unit();
    o.assign(d_o.size(), std::numeric_limits<T>::quiet_NaN());
    lse.assign(c.batch * c.heads * c.seq_q, std::numeric_limits<T>::quiet_NaN());
    if (c.padding) {
      pad.resize(c.batch * c.seq_kv);
      for (auto& x : pad) x = g() % 4 == 0 ? 1 : 0;
    }
  }

  attention_problem<T> problem() {
    attention_problem<T> p{};
    p.batch = c.batch, p.heads = c.heads, p.kv_heads = c.kv_heads;
    p.seq_q = c.seq_q, p.seq_kv = c.seq_kv, p.d_k = c.d_k, p.d_v = c.d_v;
    p.q = q.data(), p.q_batch = c.heads * c.seq_q * c.d_k, p.q_head = c.seq_q * c.d_k,
    p.q_row = c.d_k;
    p.k = k.data(), p.k_batch = c.kv_heads * c.seq_kv * c.d_k, p.k_head = c.seq_kv * c.d_k,
    p.k_row = c.d_k;
    p.v = v.data(), p.v_batch = c.kv_heads * c.seq_kv * c.d_v, p.v_head = c.seq_kv * c.d_v,
    p.v_row = c.d_v;
    p.o = o.data(), p.o_batch = c.heads * c.seq_q * c.d_v, p.o_head = c.seq_q * c.d_v,
    p.o_row = c.d_v;
    p.lse = lse.data(), p.lse_batch = c.heads * c.seq_q, p.lse_head = c.seq_q;
    p.scale = static_cast<T>(1.0 / std::sqrt(double(c.d_k)));
    p.causal = c.causal;
    if (c.padding) p.key_ignore = pad.data(), p.key_ignore_batch = c.seq_kv;
    p.dropout_rate = static_cast<T>(c.rate), p.dropout_seed = c.seed;
    return p;
  }
};

/// The reference in double: O, and dQ, dK, dV of L = Σ O ∘ dO, with P̃_ij = P_ij ·
/// keeps(b, h, i, j) / (1 − rate) asked one weight at a time.
struct reference {
  std::vector<double> o, d_q, d_k, d_v;
};

template <class T>
reference reference_of(const instance<T>& in) {
  const config& c = in.c;
  const attention_dropout<double> drop(c.rate, c.seed);
  // The rate rounded to a multiple of 2^-16, as kernel/dropout.hpp defines it.
  const double t = std::floor(c.rate * 65536.0 + 0.5);
  const double keep_scale = t >= 65536.0 ? 0.0 : 65536.0 / (65536.0 - t);
  const double scale = 1.0 / std::sqrt(double(c.d_k));
  reference r;
  r.o.assign(in.o.size(), 0.0), r.d_q.assign(in.q.size(), 0.0);
  r.d_k.assign(in.k.size(), 0.0), r.d_v.assign(in.v.size(), 0.0);
  const std::size_t group = c.heads / c.kv_heads;
  std::vector<double> p(c.seq_kv), pt(c.seq_kv), dp(c.seq_kv);
  for (std::size_t b = 0; b < c.batch; ++b)
    for (std::size_t h = 0; h < c.heads; ++h)
      for (std::size_t i = 0; i < c.seq_q; ++i) {
        const std::size_t g = h / group;
        const std::size_t qo = ((b * c.heads + h) * c.seq_q + i) * c.d_k;
        const std::size_t oo = ((b * c.heads + h) * c.seq_q + i) * c.d_v;
        auto ko = [&](std::size_t j) { return ((b * c.kv_heads + g) * c.seq_kv + j) * c.d_k; };
        auto vo = [&](std::size_t j) { return ((b * c.kv_heads + g) * c.seq_kv + j) * c.d_v; };
        double top = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < c.seq_kv; ++j) {
          const bool masked = (c.causal && j > i) || (c.padding && in.pad[b * c.seq_kv + j] != 0);
          double s = 0;
          for (std::size_t x = 0; x < c.d_k; ++x)
            s += double(in.q[qo + x]) * double(in.k[ko(j) + x]);
          p[j] = masked ? -std::numeric_limits<double>::infinity() : scale * s;
          top = std::max(top, p[j]);
        }
        if (top == -std::numeric_limits<double>::infinity()) continue;  // all masked: zeros
        double sum = 0;
        for (std::size_t j = 0; j < c.seq_kv; ++j) sum += p[j] = std::exp(p[j] - top);
        double d = 0;
        for (std::size_t j = 0; j < c.seq_kv; ++j) {
          p[j] /= sum;
          const double keep = drop.keeps(b, h, i, j) ? keep_scale : 0.0;
          pt[j] = p[j] * keep;
          double dpt = 0;
          for (std::size_t x = 0; x < c.d_v; ++x) {
            r.o[oo + x] += pt[j] * double(in.v[vo(j) + x]);
            dpt += double(in.d_o[oo + x]) * double(in.v[vo(j) + x]);
          }
          dp[j] = dpt * keep;
          d += p[j] * dp[j];
        }
        for (std::size_t j = 0; j < c.seq_kv; ++j) {
          const double ds = p[j] * (dp[j] - d);
          for (std::size_t x = 0; x < c.d_v; ++x)
            r.d_v[vo(j) + x] += pt[j] * double(in.d_o[oo + x]);
          for (std::size_t x = 0; x < c.d_k; ++x) {
            r.d_q[qo + x] += scale * ds * double(in.k[ko(j) + x]);
            r.d_k[ko(j) + x] += scale * ds * double(in.q[qo + x]);
          }
        }
      }
  return r;
}

/// max |x − ref| / (1 + |ref|); infinity if some x is not finite.
template <class T>
double worst(const std::vector<T>& x, const std::vector<double>& ref) {
  double w = 0;
  for (std::size_t e = 0; e < x.size(); ++e) {
    if (!std::isfinite(double(x[e]))) return std::numeric_limits<double>::infinity();
    w = std::max(w, std::abs(double(x[e]) - ref[e]) / (1 + std::abs(ref[e])));
  }
  return w;
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

/// Forward (fused and unfused) and backward (fused and unfused) against the reference.
template <class T>
void check_against_reference(const config& c, std::uint64_t draw) {
  instance<T> in(c, draw);
  const reference ref = reference_of(in);
  const double tol = tolerance<T>();
  argus::set_num_threads(c.threads);
  for (bool fused : {true, false}) {
    const char* name = fused ? "fused" : "unfused";
    std::fill(in.o.begin(), in.o.end(), std::numeric_limits<T>::quiet_NaN());
    attention_problem<T> p = in.problem();
    if (fused)
      argus::kernel::flash_attention(p);
    else
      argus::kernel::attention_unfused(p);
    BOOST_TEST(worst(in.o, ref.o) < tol,
               name << " forward: " << worst(in.o, ref.o) << " (" << c.describe() << ")");
    std::vector<T> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
    argus::kernel::attention_backward_problem<T> bp;
    bp.f = p, bp.lse = in.lse.data(), bp.d_o = in.d_o.data();
    bp.d_q = dq.data(), bp.d_k = dk.data(), bp.d_v = dv.data();
    if (fused)
      argus::kernel::flash_attention_backward(bp);
    else
      argus::kernel::attention_backward_unfused(bp);
    const double wq = worst(dq, ref.d_q), wk = worst(dk, ref.d_k), wv = worst(dv, ref.d_v);
    BOOST_TEST(std::max({wq, wk, wv}) < tol, name << " backward: dQ " << wq << " dK " << wk
                                                  << " dV " << wv << " (" << c.describe() << ")");
  }
  argus::set_num_threads(0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(decisions_keep_one_minus_rate_and_scale_the_kept) {
  for (double rate : {0.1, 0.5, 0.9}) {
    const attention_dropout<double> drop(rate, 42);
    const std::size_t n = 1000;
    std::vector<double> f(n);
    std::size_t kept = 0, total = 0, same_as_next = 0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < 5; ++h)
        for (std::size_t i = 0; i < 20; ++i) {
          drop.factors(b, h, i, 0, n, f.data());
          for (std::size_t j = 0; j < n; ++j) {
            BOOST_TEST_REQUIRE((f[j] == 0.0 || f[j] == drop.keep_scale()));
            BOOST_TEST_REQUIRE((f[j] != 0.0) == drop.keeps(b, h, i, j));
            kept += f[j] != 0.0;
            same_as_next += j + 1 < n && (f[j] != 0.0) == drop.keeps(b, h, i, j + 1);
          }
          total += n;
        }
    // The scale is 1 / (1 − rate) for the rate rounded to 2^-16: half a step of 2^-16 at most.
    BOOST_TEST(std::abs(drop.keep_scale() * (1 - rate) - 1) <= 0.5 / 65536 / (1 - rate) + 1e-12);
    // Binomial: 5 standard deviations of the kept fraction.
    const double expect = 1 - rate, sd = std::sqrt(rate * (1 - rate) / double(total));
    BOOST_TEST(std::abs(double(kept) / double(total) - expect) < 5 * sd,
               "rate " << rate << ": kept " << double(kept) / double(total));
    // Neighbours independent: P(equal) = r² + (1 − r)².
    const double pairs = double(total - total / n), same = rate * rate + expect * expect;
    BOOST_TEST(std::abs(same_as_next / pairs - same) < 5 * std::sqrt(same * (1 - same) / pairs),
               "rate " << rate << ": neighbours agree " << same_as_next / pairs);
  }
  // A different seed, batch item, head or query gives different decisions.
  const attention_dropout<double> a(0.5, 1), b(0.5, 2);
  std::size_t differ_seed = 0, differ_head = 0, differ_row = 0, differ_batch = 0;
  for (std::size_t j = 0; j < 4000; ++j) {
    differ_seed += a.keeps(0, 0, 0, j) != b.keeps(0, 0, 0, j);
    differ_head += a.keeps(0, 0, 0, j) != a.keeps(0, 1, 0, j);
    differ_row += a.keeps(0, 0, 0, j) != a.keeps(0, 0, 1, j);
    differ_batch += a.keeps(0, 0, 0, j) != a.keeps(1, 0, 0, j);
  }
  for (std::size_t d : {differ_seed, differ_head, differ_row, differ_batch})
    BOOST_TEST((d > 1800 && d < 2200), "decisions that differ: " << d << " of 4000");
}

BOOST_AUTO_TEST_CASE(factors_at_any_offset_agree_with_single_decisions) {
  const attention_dropout<float> drop(0.3f, 7);
  for (std::size_t j0 : {0, 1, 2, 3, 5, 62, 63, 64, 1001})
    for (std::size_t n : {1, 2, 3, 4, 5, 9, 64, 67}) {
      std::vector<float> f(n), w(2 * n, 2.0f);
      drop.factors(1, 3, 17, j0, n, f.data());
      drop.apply(1, 3, 17, j0, n, w.data(), 2);  // every other element
      for (std::size_t k = 0; k < n; ++k) {
        const bool keep = drop.keeps(1, 3, 17, j0 + k);
        BOOST_TEST_REQUIRE(f[k] == (keep ? drop.keep_scale() : 0.0f));
        BOOST_TEST_REQUIRE(w[2 * k] == 2.0f * f[k]);
        BOOST_TEST_REQUIRE(w[2 * k + 1] == 2.0f);
      }
    }
}

// The tile form (the fused forward's layout: by key, rows side by side) against single
// decisions, for row counts around the SIMD width and unaligned key ranges.
BOOST_AUTO_TEST_CASE(tile_form_agrees_with_single_decisions) {
  const attention_dropout<float> drop(0.45f, 99);
  for (std::size_t rows : {1, 3, 8, 9, 17})
    for (std::size_t j0 : {0, 5, 64})
      for (std::size_t n : {1, 7, 8, 13, 40}) {
        const std::size_t ld = 24;
        std::vector<std::size_t> head(rows), query(rows);
        for (std::size_t r = 0; r < rows; ++r) head[r] = r % 3, query[r] = 100 + 7 * r;
        std::vector<float> tile(n * ld, 3.0f);
        drop.apply_tile(2, head.data(), query.data(), rows, j0, n, tile.data(), ld);
        for (std::size_t k = 0; k < n; ++k)
          for (std::size_t r = 0; r < ld; ++r) {
            const float want = r >= rows                                  ? 3.0f
                               : drop.keeps(2, head[r], query[r], j0 + k) ? 3.0f * drop.keep_scale()
                                                                          : 0.0f;
            BOOST_TEST_REQUIRE(tile[k * ld + r] == want);
          }
      }
}

using scalar_types = std::tuple<float, double>;

BOOST_AUTO_TEST_CASE_TEMPLATE(both_evaluators_drop_the_reference_weights, T, scalar_types) {
  std::mt19937_64 g(11);
  std::uniform_int_distribution<std::size_t> len(1, 140);
  for (int trial = 0; trial < 6; ++trial) {
    config c;
    c.batch = 1 + trial % 2, c.heads = 4, c.kv_heads = trial % 3 == 0 ? 2 : 4;
    c.seq_q = len(g), c.seq_kv = len(g);
    c.d_k = trial % 2 == 0 ? 64 : 5, c.d_v = trial % 2 == 0 ? 64 : 7;
    c.causal = trial % 3 == 1, c.padding = trial % 3 == 2;
    c.rate = trial < 3 ? 0.2 : 0.6;
    c.seed = g();
    c.threads = 1 + std::size_t(trial) % 3;
    check_against_reference<T>(c, g());
  }
}

// Few queries against many keys take the decode path (keys split over threads, chunks
// merged): the decisions are those of every other path.
BOOST_AUTO_TEST_CASE_TEMPLATE(decode_shapes_drop_the_same_weights, T, scalar_types) {
  for (std::size_t threads : {1, 2, 3}) {
    config c;
    c.heads = 2, c.kv_heads = 1, c.seq_q = 3, c.seq_kv = 700, c.d_k = 64, c.d_v = 64;
    c.rate = 0.4, c.threads = threads;
    check_against_reference<T>(c, 5);
  }
}

// rate 0 keeps every weight unscaled; rate 1 drops everything: output and gradients 0.
BOOST_AUTO_TEST_CASE(rate_zero_keeps_everything_and_rate_one_drops_everything) {
  config c;
  c.batch = 2, c.heads = 2, c.seq_q = 70, c.seq_kv = 90, c.d_k = 16, c.d_v = 16, c.causal = true;
  c.rate = 0;
  check_against_reference<float>(c, 3);
  c.rate = 1;
  instance<float> all(c, 3);
  attention_problem<float> pa = all.problem();
  for (bool fused : {true, false}) {
    if (fused)
      argus::kernel::flash_attention(pa);
    else
      argus::kernel::attention_unfused(pa);
    BOOST_TEST(std::all_of(all.o.begin(), all.o.end(), [](float x) { return x == 0.0f; }));
    std::vector<float> dq(all.q.size(), 1), dk(all.k.size(), 1), dv(all.v.size(), 1);
    argus::kernel::attention_backward_problem<float> bp;
    bp.f = pa, bp.lse = all.lse.data(), bp.d_o = all.d_o.data();
    bp.d_q = dq.data(), bp.d_k = dk.data(), bp.d_v = dv.data();
    if (fused)
      argus::kernel::flash_attention_backward(bp);
    else
      argus::kernel::attention_backward_unfused(bp);
    for (const auto* x : {&dq, &dk, &dv})
      BOOST_TEST(std::all_of(x->begin(), x->end(), [](float e) { return e == 0.0f; }),
                 (fused ? "fused" : "unfused"));
  }
}

// The fused backward with dropout gives the same bits on every run with a given thread
// count (the decisions are recomputed, never racing).
BOOST_AUTO_TEST_CASE(fused_backward_with_dropout_is_deterministic) {
  config c;
  c.batch = 2, c.heads = 4, c.kv_heads = 2, c.seq_q = 150, c.seq_kv = 150, c.d_k = 32, c.d_v = 32,
  c.causal = true, c.rate = 0.3;
  instance<float> in(c, 9);
  attention_problem<float> p = in.problem();
  argus::kernel::flash_attention(p);
  for (std::size_t threads : {1, 2, 3}) {
    argus::set_num_threads(threads);
    std::vector<float> runs[2][3];
    for (auto& r : runs) {
      r[0].assign(in.q.size(), 0), r[1].assign(in.k.size(), 0), r[2].assign(in.v.size(), 0);
      argus::kernel::attention_backward_problem<float> bp;
      bp.f = p, bp.lse = in.lse.data(), bp.d_o = in.d_o.data();
      bp.d_q = r[0].data(), bp.d_k = r[1].data(), bp.d_v = r[2].data();
      argus::kernel::flash_attention_backward(bp);
    }
    for (std::size_t x = 0; x < 3; ++x)
      BOOST_TEST((runs[0][x] == runs[1][x]), "gradient " << x << " on " << threads << " threads");
  }
  argus::set_num_threads(0);
}

// The reference's gradients are those of the function: central differences of Σ O ∘ dO
// (the reference forward, in double) with the decisions fixed by the seed.
BOOST_AUTO_TEST_CASE(reference_gradients_match_finite_differences) {
  config c;
  c.batch = 2, c.heads = 2, c.kv_heads = 1, c.seq_q = 5, c.seq_kv = 6, c.d_k = 3, c.d_v = 4;
  c.causal = true, c.padding = true, c.rate = 0.35;
  instance<double> in(c, 21);
  const reference ref = reference_of(in);
  auto loss = [&] {
    const reference r = reference_of(in);
    double s = 0;
    for (std::size_t e = 0; e < r.o.size(); ++e) s += r.o[e] * in.d_o[e];
    return s;
  };
  auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
    double w = 0;
    for (std::size_t e = 0; e < x.size(); ++e) {
      const double keep = x[e], h = 1e-6;
      x[e] = keep + h;
      const double up = loss();
      x[e] = keep - h;
      const double down = loss();
      x[e] = keep;
      w = std::max(w, std::abs((up - down) / (2 * h) - grad[e]) / (1 + std::abs(grad[e])));
    }
    BOOST_TEST(w < 1e-7, name << ": worst " << w);
  };
  check(in.q, ref.d_q, "dQ");
  check(in.k, ref.d_k, "dK");
  check(in.v, ref.d_v, "dV");
  // Some weights were dropped and some kept, so the test saw both.
  const attention_dropout<double> drop(c.rate, c.seed);
  std::size_t kept = 0;
  for (std::size_t j = 0; j < c.seq_kv; ++j) kept += drop.keeps(0, 0, c.seq_q - 1, j);
  BOOST_TEST((kept > 0 && kept < c.seq_kv));
}
