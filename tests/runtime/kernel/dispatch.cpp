// links: argus_dispatch_test_kernels
// A dispatching kernel library (argus/kernel/dispatcher.hpp) on the machine at hand: every
// entry point, for float and double, run through each instruction set the library holds and
// this CPU runs, against a plain reference in double and against each other; the dispatched
// entry points against the variant they should run; the choice of that variant, from the
// CPU's features or from ARGUS_ISA; and what reports name: explain()'s instruction set and the
// FMA peak of benchmarks are the variant's, not this file's compilation target.
// tests/CMakeLists.txt runs this file three times: as is, with ARGUS_ISA=portable, and with an
// ARGUS_ISA that names no instruction set.
// One kernel header alone first, as a benchmark of one kernel includes it: its entry points
// must be the dispatching ones already. Were they not, this call would instantiate gemm_nn's
// body here, at the program's width, and instances.hpp below would not compile (an explicit
// specialization after an instantiation).
#include "argus/kernel/gemm.hpp"

#include <vector>

namespace {
std::vector<float> gemm_through_its_header_alone(const std::vector<float>& a,
                                                 const std::vector<float>& b, std::size_t n) {
  std::vector<float> c(n * n);
  argus::kernel::gemm_nn<float>(n, n, n, 1.0f, a.data(), n, b.data(), n, c.data(), n);
  return c;
}
}  // namespace

#include "argus/bench/peak.hpp"
#include "argus/eval/explain.hpp"
#include "argus/kernel/instances.hpp"
#include "support/messages.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(ARGUS_DISPATCH_KERNELS)
#error \
    "unit.kernel.dispatch links a dispatching kernel library, which defines ARGUS_DISPATCH_KERNELS"
#endif

namespace {

using argus::kernel::attention_backward_problem;
using argus::kernel::attention_problem;
using argus::kernel::entry_point_table;
using argus::kernel::isa;
using argus::kernel::isa_error;
using argus::kernel::isa_name;
using argus::kernel::kernel_variant;

// ---- the choice of a variant -----------------------------------------------------------

bool runs_up_to_avx2(isa i) { return i != isa::avx512; }
bool runs_everything(isa) { return true; }
bool runs_nothing(isa) { return false; }

using argus::test::says;

BOOST_AUTO_TEST_CASE(choose_isa_runs_the_fastest_set_or_the_one_asked_for) {
  using argus::kernel::choose_isa;
  const std::vector<isa> all{isa::portable, isa::avx2, isa::avx512};
  const std::vector<isa> portable_only{isa::portable};
  // No request: the fastest set the library holds and the CPU runs.
  BOOST_TEST((choose_isa(nullptr, all, runs_up_to_avx2) == isa::avx2));
  BOOST_TEST((choose_isa("", all, runs_up_to_avx2) == isa::avx2));
  BOOST_TEST((choose_isa(nullptr, all, runs_everything) == isa::avx512));
  BOOST_TEST((choose_isa(nullptr, portable_only, runs_everything) == isa::portable));
  // A request: that set, or an error naming the request and what would run.
  BOOST_TEST((choose_isa("portable", all, runs_up_to_avx2) == isa::portable));
  BOOST_TEST((choose_isa("avx2", all, runs_up_to_avx2) == isa::avx2));
  BOOST_TEST((choose_isa("avx512", all, runs_everything) == isa::avx512));
  BOOST_CHECK_EXCEPTION(choose_isa("avx512", all, runs_up_to_avx2), isa_error,
                        says({"ARGUS_ISA=\"avx512\"", "cannot run", "avx512f", "avx2, portable"}));
  BOOST_CHECK_EXCEPTION(choose_isa("avx2", portable_only, runs_everything), isa_error,
                        says({"ARGUS_ISA=\"avx2\"", "built without", "holds: portable"}));
  BOOST_CHECK_EXCEPTION(
      choose_isa("AVX2", all, runs_everything), isa_error,
      says({"ARGUS_ISA=\"AVX2\"", "names no instruction set", "portable, avx2 or avx512"}));
  BOOST_CHECK_EXCEPTION(choose_isa("sse9", all, runs_everything), isa_error,
                        says({"ARGUS_ISA=\"sse9\"", "names no instruction set"}));
  // The request is shown quoted, a trailing space visible, a control character or a byte
  // outside printable ASCII as \xNN (never sent raw to a terminal), at most 40 characters.
  BOOST_CHECK_EXCEPTION(choose_isa("avx2 ", all, runs_everything), isa_error,
                        says({"ARGUS_ISA=\"avx2 \" names no instruction set"}));
  BOOST_CHECK_EXCEPTION(choose_isa("avx2\n\x1b[31m\xc3\xa9", all, runs_everything), isa_error,
                        says({"ARGUS_ISA=\"avx2\\x0a\\x1b[31m\\xc3\\xa9\" names"}));
  const std::string long_request(100000, 'a');
  BOOST_CHECK_EXCEPTION(choose_isa(long_request.c_str(), all, runs_everything), isa_error,
                        says({"ARGUS_ISA=\"" + std::string(40, 'a') + "...\" names"}));
  BOOST_CHECK_EXCEPTION(
      choose_isa(nullptr, all, runs_nothing), isa_error,
      says({"none of the kernel library's instruction sets", "avx512, avx2, portable"}));
}

/// What choose_isa says for this process: the set, or the message of its error.
struct expected_choice {
  isa id = isa::portable;
  std::string error;
};

expected_choice expected_for_this_process() {
  std::vector<isa> held;
  for (const kernel_variant& v : argus::kernel::kernel_variants()) held.push_back(v.id);
  try {
    return {argus::kernel::choose_isa(std::getenv("ARGUS_ISA"), held), ""};
  } catch (const isa_error& e) {
    return {isa::portable, e.what()};
  }
}

BOOST_AUTO_TEST_CASE(the_library_holds_its_sets_slowest_first) {
  const std::span<const kernel_variant> variants = argus::kernel::kernel_variants();
  BOOST_TEST_REQUIRE(variants.size() >= 2u);  // portable and at least the native set
  BOOST_TEST((variants.front().id == isa::portable));
  for (std::size_t i = 1; i < variants.size(); ++i)
    BOOST_TEST((variants[i - 1].id < variants[i].id));
  for (const kernel_variant& v : variants)
    BOOST_TEST_MESSAGE(
        "held: " << isa_name(v.id)
                 << (argus::kernel::cpu_supports(v.id) ? "" : " (this CPU cannot run it)"));
}

BOOST_AUTO_TEST_CASE(the_entry_points_run_the_chosen_set) {
  const char* request = std::getenv("ARGUS_ISA");
  const expected_choice expected = expected_for_this_process();
  if (!expected.error.empty()) {
    // Asking for what cannot run is an error at every call, never another set.
    BOOST_TEST_MESSAGE("ARGUS_ISA=" << request << ": " << expected.error);
    BOOST_CHECK_EXCEPTION(argus::kernel::active_isa(), isa_error, says({expected.error}));
    BOOST_CHECK_EXCEPTION(argus::kernel::active_variant(), isa_error, says({expected.error}));
    float row[3] = {1, 2, 3};
    BOOST_CHECK_EXCEPTION(argus::kernel::softmax_rows(row, 1, 3, 3), isa_error,
                          says({expected.error}));
    return;
  }
  BOOST_TEST_MESSAGE("active: " << isa_name(argus::kernel::active_isa()));
  BOOST_TEST((argus::kernel::active_isa() == expected.id));
  BOOST_TEST((argus::kernel::active_variant().id == expected.id));
  if (request == nullptr || *request == '\0') {
    // The best the CPU supports among the sets held: the last one it runs.
    isa best = isa::portable;
    for (const kernel_variant& v : argus::kernel::kernel_variants())
      if (argus::kernel::cpu_supports(v.id)) best = v.id;
    BOOST_TEST((argus::kernel::active_isa() == best));
  }
}

// ---- every entry point, every runnable set -----------------------------------------------

template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 3e-5 : 1e-12;

/// The variants of the library this CPU runs, slowest (portable) first.
std::vector<const kernel_variant*> runnable_variants() {
  std::vector<const kernel_variant*> out;
  for (const kernel_variant& v : argus::kernel::kernel_variants())
    if (argus::kernel::cpu_supports(v.id)) out.push_back(&v);
  return out;
}

/// A table of the entry points themselves: in this program, the dispatchers.
template <class T>
const entry_point_table<T>& dispatching_entry_points() {
  using namespace argus::kernel;
  static const entry_point_table<T> table{ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_TABLE_ENTRY, T)};
  return table;
}

template <class T>
using runner = std::function<std::vector<T>(const entry_point_table<T>&)>;

/// Runs `run` through every runnable variant: each must be within tolerance of `reference`
/// (|out - ref| <= tol · (1 + |ref|); infinities equal) and of the first (portable) one; the
/// dispatching entry points must give the active variant's result bit for bit.
template <class T>
void check_every_variant(const std::string& what, const std::vector<double>& reference,
                         const runner<T>& run) {
  const auto compare = [&](const std::vector<T>& out, const std::vector<double>& ref,
                           const std::string& against) {
    BOOST_TEST_REQUIRE(out.size() == ref.size());
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double o = out[i], r = ref[i];
      const double err = std::isinf(r) || std::isinf(o)
                             ? (o == r ? 0.0 : std::numeric_limits<double>::infinity())
                             : std::abs(o - r) / (1 + std::abs(r));
      if (!(err <= worst)) worst = err, at = i;
    }
    BOOST_TEST(worst <= tolerance<T>, what << " against " << against << ": worst relative error "
                                           << worst << " at element " << at << " of "
                                           << out.size());
  };
  std::vector<double> first;
  for (const kernel_variant* v : runnable_variants()) {
    const std::vector<T> out = run(v->entry_points<T>());
    compare(out, reference, std::string("the reference, on ") + isa_name(v->id));
    if (first.empty())
      first.assign(out.begin(), out.end());
    else
      compare(out, first, std::string("portable, on ") + isa_name(v->id));
  }
  if (!expected_for_this_process().error.empty()) return;
  const std::vector<T> active = run(argus::kernel::active_variant().entry_points<T>());
  const std::vector<T> dispatched = run(dispatching_entry_points<T>());
  BOOST_TEST((dispatched == active), what << ": the entry points differ from the "
                                          << isa_name(argus::kernel::active_isa())
                                          << " variant they dispatch to");
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> out(n);
  for (T& x : out) x = static_cast<T>(u(gen));
  return out;
}

/// An attention problem in head-major layout, (B,H,S,D), with its own storage.
template <class T>
struct attention_case {
  std::size_t batch, heads, kv_heads, seq_q, seq_kv, d_k, d_v;
  bool causal;
  std::vector<T> q, k, v, additive, d_o;  // additive: (B,H,SQ,SKV) or empty
  std::vector<std::uint8_t> key_ignore;   // (B,SKV) or empty
  std::string name;

  attention_case(std::string n, std::size_t b, std::size_t h, std::size_t g, std::size_t sq,
                 std::size_t skv, std::size_t dk, std::size_t dv, bool causal_mask,
                 bool ignore_keys, bool additive_mask)
      : batch(b),
        heads(h),
        kv_heads(g),
        seq_q(sq),
        seq_kv(skv),
        d_k(dk),
        d_v(dv),
        causal(causal_mask),
        name(std::move(n)) {
    q = random_values<T>(b * h * sq * dk, 1);
    k = random_values<T>(b * g * skv * dk, 2);
    v = random_values<T>(b * g * skv * dv, 3);
    d_o = random_values<T>(b * h * sq * dv, 4);
    if (additive_mask) additive = random_values<T>(b * h * sq * skv, 5, -2, 2);
    if (ignore_keys) {
      key_ignore.assign(b * skv, 0);
      for (std::size_t j = 0; j < b * skv; j += 7) key_ignore[j] = 1;  // key 0 of item 0:
    }                                                                  // its row 0 is fully masked
  }

  T scale() const { return T(1) / std::sqrt(T(d_k)); }

  attention_problem<T> problem(T* o, T* lse) const {
    attention_problem<T> p{};
    p.batch = batch, p.heads = heads, p.kv_heads = kv_heads, p.seq_q = seq_q, p.seq_kv = seq_kv;
    p.d_k = d_k, p.d_v = d_v;
    p.q = q.data(), p.q_batch = heads * seq_q * d_k, p.q_head = seq_q * d_k, p.q_row = d_k;
    p.k = k.data(), p.k_batch = kv_heads * seq_kv * d_k, p.k_head = seq_kv * d_k, p.k_row = d_k;
    p.v = v.data(), p.v_batch = kv_heads * seq_kv * d_v, p.v_head = seq_kv * d_v, p.v_row = d_v;
    p.o = o, p.o_batch = heads * seq_q * d_v, p.o_head = seq_q * d_v, p.o_row = d_v;
    p.scale = scale();
    p.causal = causal;
    if (!key_ignore.empty()) p.key_ignore = key_ignore.data(), p.key_ignore_batch = seq_kv;
    if (!additive.empty()) {
      p.additive = additive.data();
      p.add_batch = heads * seq_q * seq_kv, p.add_head = seq_q * seq_kv, p.add_row = seq_kv;
    }
    p.lse = lse, p.lse_batch = heads * seq_q, p.lse_head = seq_q;
    return p;
  }

  /// The reference weights P[b][h][i][j] in double (all zeros for a fully masked row), and
  /// the log-sum-exp of each row.
  void reference_weights(std::vector<double>& weights, std::vector<double>& lse) const {
    weights.assign(batch * heads * seq_q * seq_kv, 0.0);
    lse.assign(batch * heads * seq_q, -std::numeric_limits<double>::infinity());
    const std::size_t group = heads / kv_heads;
    std::vector<double> logits(seq_kv);
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < seq_q; ++i) {
          const std::size_t g = h / group;
          double top = -std::numeric_limits<double>::infinity();
          for (std::size_t j = 0; j < seq_kv; ++j) {
            double s = 0;
            for (std::size_t c = 0; c < d_k; ++c)
              s += double(q[((b * heads + h) * seq_q + i) * d_k + c]) *
                   double(k[((b * kv_heads + g) * seq_kv + j) * d_k + c]);
            s *= double(scale());
            if (!additive.empty())
              s += double(additive[((b * heads + h) * seq_q + i) * seq_kv + j]);
            if ((causal && j > i) || (!key_ignore.empty() && key_ignore[b * seq_kv + j] != 0))
              s = -std::numeric_limits<double>::infinity();
            logits[j] = s;
            top = std::max(top, s);
          }
          if (std::isinf(top)) continue;
          double sum = 0;
          for (double& l : logits) sum += (l = std::exp(l - top));
          double* w = &weights[((b * heads + h) * seq_q + i) * seq_kv];
          for (std::size_t j = 0; j < seq_kv; ++j) w[j] = logits[j] / sum;
          lse[(b * heads + h) * seq_q + i] = top + std::log(sum);
        }
  }

  /// O then the log-sum-exp, as the forward passes write them.
  std::vector<double> reference_forward() const {
    std::vector<double> w, lse;
    reference_weights(w, lse);
    std::vector<double> out(batch * heads * seq_q * d_v, 0.0);
    const std::size_t group = heads / kv_heads;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < seq_q; ++i)
          for (std::size_t j = 0; j < seq_kv; ++j) {
            const double p = w[((b * heads + h) * seq_q + i) * seq_kv + j];
            for (std::size_t c = 0; c < d_v; ++c)
              out[((b * heads + h) * seq_q + i) * d_v + c] +=
                  p * double(v[((b * kv_heads + h / group) * seq_kv + j) * d_v + c]);
          }
    out.insert(out.end(), lse.begin(), lse.end());
    return out;
  }

  /// dQ, dK, dV (attention_backward.hpp has the formulas), one after the other.
  std::vector<double> reference_backward() const {
    std::vector<double> w, lse;
    reference_weights(w, lse);
    const std::size_t group = heads / kv_heads;
    std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0), ds(seq_kv);
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < seq_q; ++i) {
          const std::size_t g = h / group;
          const double* p = &w[((b * heads + h) * seq_q + i) * seq_kv];
          const T* go = &d_o[((b * heads + h) * seq_q + i) * d_v];
          double row_dot = 0;
          for (std::size_t j = 0; j < seq_kv; ++j) {
            double dp = 0;
            for (std::size_t c = 0; c < d_v; ++c)
              dp += double(go[c]) * double(v[((b * kv_heads + g) * seq_kv + j) * d_v + c]);
            ds[j] = dp;
            row_dot += p[j] * dp;
          }
          for (std::size_t j = 0; j < seq_kv; ++j) {
            const double s = p[j] * (ds[j] - row_dot) * double(scale());
            for (std::size_t c = 0; c < d_v; ++c)
              dv[((b * kv_heads + g) * seq_kv + j) * d_v + c] += p[j] * double(go[c]);
            for (std::size_t c = 0; c < d_k; ++c) {
              dq[((b * heads + h) * seq_q + i) * d_k + c] +=
                  s * double(k[((b * kv_heads + g) * seq_kv + j) * d_k + c]);
              dk[((b * kv_heads + g) * seq_kv + j) * d_k + c] +=
                  s * double(q[((b * heads + h) * seq_q + i) * d_k + c]);
            }
          }
        }
    dq.insert(dq.end(), dk.begin(), dk.end());
    dq.insert(dq.end(), dv.begin(), dv.end());
    return dq;
  }

  using forward_slot = decltype(&entry_point_table<T>::flash_attention);
  using backward_slot = decltype(&entry_point_table<T>::flash_attention_backward);

  /// O then the log-sum-exp, computed by one forward entry point of `e`.
  std::vector<T> forward(const entry_point_table<T>& e, forward_slot slot) const {
    std::vector<T> out(batch * heads * seq_q * d_v + batch * heads * seq_q, T(7));
    (e.*slot)(problem(out.data(), out.data() + batch * heads * seq_q * d_v));
    return out;
  }

  /// dQ, dK, dV by one backward entry point of `e`, after e.flash_attention's forward.
  std::vector<T> backward(const entry_point_table<T>& e, backward_slot slot) const {
    std::vector<T> fwd = forward(e, &entry_point_table<T>::flash_attention);
    std::vector<T> grads(q.size() + k.size() + v.size(), T(7));
    attention_backward_problem<T> bp;
    bp.f = problem(fwd.data(), nullptr);
    bp.lse = fwd.data() + batch * heads * seq_q * d_v;
    bp.d_o = d_o.data();
    bp.d_q = grads.data(), bp.d_k = grads.data() + q.size(), bp.d_v = bp.d_k + k.size();
    (e.*slot)(bp);
    return grads;
  }
};

template <class T>
std::vector<attention_case<T>> attention_cases() {
  return {
      // d_k = d_v = 64, a fixed width; grouped heads; causal with ignored keys (row 0 of item 0
      // sees no key at all).
      {"attention, d 64, GQA 4/2, causal, ignored keys", 2, 4, 2, 37, 45, 64, 64, true, true,
       false},
      // Run-time widths, one K/V head per query head, an additive mask, more keys than queries.
      {"attention, d_k 24, d_v 40, additive mask", 1, 3, 3, 19, 70, 24, 40, false, false, true},
  };
}

using value_types = std::tuple<float, double>;

BOOST_AUTO_TEST_CASE_TEMPLATE(forward_passes_agree, T, value_types) {
  for (const attention_case<T>& c : attention_cases<T>()) {
    const std::vector<double> ref = c.reference_forward();
    check_every_variant<T>("flash_attention: " + c.name, ref, [&](const entry_point_table<T>& e) {
      return c.forward(e, &entry_point_table<T>::flash_attention);
    });
    check_every_variant<T>("attention_unfused: " + c.name, ref, [&](const entry_point_table<T>& e) {
      return c.forward(e, &entry_point_table<T>::attention_unfused);
    });
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(backward_passes_agree, T, value_types) {
  for (const attention_case<T>& c : attention_cases<T>()) {
    const std::vector<double> ref = c.reference_backward();
    check_every_variant<T>("flash_attention_backward: " + c.name, ref,
                           [&](const entry_point_table<T>& e) {
                             return c.backward(e, &entry_point_table<T>::flash_attention_backward);
                           });
    check_every_variant<T>(
        "attention_backward_unfused: " + c.name, ref, [&](const entry_point_table<T>& e) {
          return c.backward(e, &entry_point_table<T>::attention_backward_unfused);
        });
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(gemms_agree, T, value_types) {
  struct shape {
    std::size_t m, n, k;
    bool bias, accumulate;
  };
  // Odd sizes (partial register tiles and slivers), and past a k block: 300 past AVX-512's
  // (kc 256), 530 past the 16-register sets' (kc 512). 21 rows: a few slivers that read B in
  // place, the first taller than the others (AVX2: 6 + 3 x 5, its first sliver's kernels
  // alternating as direct_b_fetch_group says; AVX-512: 11 + 10).
  for (const shape s : {shape{37, 45, 29, true, true}, shape{70, 130, 300, false, false},
                        shape{33, 50, 530, true, true}, shape{21, 100, 530, true, false}}) {
    const std::vector<T> a = random_values<T>(s.m * s.k, 11), b = random_values<T>(s.k * s.n, 12);
    const std::vector<T> c0 = random_values<T>(s.m * s.n, 13), bias = random_values<T>(s.n, 14);
    const T alpha = T(0.75);
    // nn: C = A B; nt: B read as Bᵀ (n x k), the same buffer with leading dimension k;
    // tn: A read as Aᵀ (k x m), the same buffer with leading dimension m.
    for (const char* const form : {"nn", "nt", "tn"}) {
      const bool nt = form[0] == 'n' && form[1] == 't', tn = form[0] == 't';
      std::vector<double> ref(s.m * s.n);
      for (std::size_t i = 0; i < s.m; ++i)
        for (std::size_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (std::size_t p = 0; p < s.k; ++p)
            sum += double(tn ? a[p * s.m + i] : a[i * s.k + p]) *
                   double(nt ? b[j * s.k + p] : b[p * s.n + j]);
          ref[i * s.n + j] = double(alpha) * sum + (s.bias ? double(bias[j]) : 0.0) +
                             (s.accumulate ? double(c0[i * s.n + j]) : 0.0);
        }
      const std::string what = std::string("gemm_") + form + " " + std::to_string(s.m) + "x" +
                               std::to_string(s.n) + "x" + std::to_string(s.k);
      check_every_variant<T>(what, ref, [&](const entry_point_table<T>& e) {
        std::vector<T> c = c0;
        const auto gemm = nt ? e.gemm_nt : tn ? e.gemm_tn : e.gemm_nn;
        gemm(s.m, s.n, s.k, alpha, a.data(), tn ? s.m : s.k, b.data(), nt ? s.k : s.n, c.data(),
             s.n, s.bias ? bias.data() : nullptr, s.accumulate);
        return c;
      });
    }
    // gemm_nn_split: the product written as column blocks (split heads), for a block width
    // that is a multiple of some sets' register tile and not of others'.
    for (const std::size_t block : {std::size_t{8}, std::size_t{12}, std::size_t{32}}) {
      std::vector<double> ref(s.m * s.n);
      for (std::size_t i = 0; i < s.m; ++i)
        for (std::size_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (std::size_t p = 0; p < s.k; ++p)
            sum += double(a[i * s.k + p]) * double(b[p * s.n + j]);
          ref[i * s.n + j] = double(alpha) * sum + (s.bias ? double(bias[j]) : 0.0) +
                             (s.accumulate ? double(c0[i * s.n + j]) : 0.0);
        }
      const std::size_t blocks = (s.n + block - 1) / block, stride = s.m * block + 3;
      const std::string what = "gemm_nn_split " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                               "x" + std::to_string(s.k) + " block " + std::to_string(block);
      check_every_variant<T>(what, ref, [&](const entry_point_table<T>& e) {
        std::vector<T> split(blocks * stride);
        for (std::size_t i = 0; i < s.m; ++i)
          for (std::size_t j = 0; j < s.n; ++j)
            split[j / block * stride + i * block + j % block] = c0[i * s.n + j];
        e.gemm_nn_split(s.m, s.n, s.k, alpha, a.data(), s.k, b.data(), s.n, split.data(), block,
                        block, stride, s.bias ? bias.data() : nullptr, s.accumulate);
        std::vector<T> c(s.m * s.n);
        for (std::size_t i = 0; i < s.m; ++i)
          for (std::size_t j = 0; j < s.n; ++j)
            c[i * s.n + j] = split[j / block * stride + i * block + j % block];
        return c;
      });
    }
  }
}

// A weight packed once (pack_gemm_b) by each set and multiplied by each set's
// gemm_nn_split_prepacked: with its own panels it reads them in place, with another set's
// (another panel width) it must fall back to B, never misread them; every pairing must give
// the product.
// A few rows against a B of detail::b_from_memory_bytes or more: one sliver whose kernels
// fetch a whole call ahead (gemm_micro_kernel_direct_b_rows<..., FromMemory>) on every set,
// from one row (16-register sets) or from two or four (AVX-512, rows_fetch_a_call_ahead), B's
// rows a multiple of 4 KiB apart or not, against a double reference; several k blocks on
// every set (k 1030 > 2 x 512). And against a B of 4 MiB (past detail::b_past_l2_bytes), where
// AVX2 sweeps one or two rows and fetches a call ahead for more, and AVX-512 takes the register
// tile for 7-8 rows, or fetches a call ahead for 3-8 where B's rows are a multiple of 4 KiB
// apart (few_rows_read_for).
BOOST_AUTO_TEST_CASE(few_rows_against_a_large_b_agree_across_sets) {
  using T = float;
  const std::size_t k = 1030, large = (std::size_t{16} << 20) / (k * sizeof(T)) + 21;
  // B holds k rows at either stride (n + 5, or n rounded up to whole pages): k (n + page).
  const std::size_t page = 4096 / sizeof(T);
  const std::vector<T> a = random_values<T>(8 * k, 31),
                       b = random_values<T>(k * (large + page), 32);
  const std::vector<T> bias = random_values<T>(large, 33);
  const std::size_t mid = (std::size_t{4} << 20) / (k * sizeof(T)) + 21;
  for (const std::size_t n : {large, mid})
    for (const std::size_t ldb : {n + 5, (n + page) / page * page})
      for (const std::size_t m :
           {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{7}, std::size_t{8}}) {
        std::vector<double> ref(m * n);
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            double sum = 0;
            for (std::size_t p = 0; p < k; ++p)
              sum += double(a[i * k + p]) * double(b[p * ldb + j]);
            ref[i * n + j] = 0.5 * sum + double(bias[j]);
          }
        const std::string what = "gemm_nn " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                 std::to_string(k) + ", B's rows " + std::to_string(ldb) + " apart";
        check_every_variant<T>(what, ref, [&](const entry_point_table<T>& e) {
          std::vector<T> c(m * n, T(7));
          e.gemm_nn(m, n, k, T(0.5), a.data(), k, b.data(), ldb, c.data(), n, bias.data(), false);
          return c;
        });
      }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(prepacked_gemms_agree_across_sets, T, value_types) {
  const std::size_t m = 37, n = 96, k = 70;
  const std::vector<T> a = random_values<T>(m * k, 21), b = random_values<T>(k * n, 22);
  const std::vector<T> bias = random_values<T>(n, 23);
  std::vector<double> ref(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t p = 0; p < k; ++p) sum += double(a[i * k + p]) * double(b[p * n + j]);
      ref[i * n + j] = sum + double(bias[j]);
    }
  for (const kernel_variant* packer : runnable_variants()) {
    const entry_point_table<T>& pe = packer->entry_points<T>();
    std::vector<T> panels(pe.gemm_packed_b_size(k, n));
    pe.pack_gemm_b(k, n, b.data(), n, panels.data());
    const std::size_t width = pe.gemm_panel_width();
    const std::string what = std::string("gemm_nn_split_prepacked, panels packed by ") +
                             isa_name(packer->id) + " (width " + std::to_string(width) + ")";
    check_every_variant<T>(what, ref, [&](const entry_point_table<T>& e) {
      std::vector<T> c(m * n, T(7));
      e.gemm_nn_split_prepacked(m, n, k, T(1), a.data(), k, b.data(), n, panels.data(), width, n, 0,
                                c.data(), n, n, 0, bias.data(), false);
      return c;
    });
  }
}

BOOST_AUTO_TEST_CASE(a_file_with_one_kernel_header_calls_the_dispatcher) {
  if (!expected_for_this_process().error.empty()) return;
  const std::size_t n = 40;
  const std::vector<float> a = random_values<float>(n * n, 31), b = random_values<float>(n * n, 32);
  std::vector<float> c(n * n);
  argus::kernel::active_variant().entry_points<float>().gemm_nn(
      n, n, n, 1.0f, a.data(), n, b.data(), n, c.data(), n, nullptr, false);
  BOOST_TEST((gemm_through_its_header_alone(a, b, n) == c));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_rows_agree, T, value_types) {
  const std::size_t rows = 6, cols = 53, ld = 57;
  std::vector<T> s = random_values<T>(rows * ld, 21, -6, 6);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  for (std::size_t j = 0; j < cols; j += 5) s[j] = minus_inf;   // row 0: some keys masked
  std::fill(s.begin() + ld, s.begin() + ld + cols, minus_inf);  // row 1: all masked
  std::vector<double> ref(s.begin(), s.end());
  for (std::size_t r = 0; r < rows; ++r) {
    double* x = &ref[r * ld];
    const double top = *std::max_element(x, x + cols);
    if (std::isinf(top)) {
      std::fill(x, x + cols, 0.0);
      continue;
    }
    double sum = 0;
    for (std::size_t j = 0; j < cols; ++j) sum += (x[j] = std::exp(x[j] - top));
    for (std::size_t j = 0; j < cols; ++j) x[j] /= sum;
  }
  check_every_variant<T>("softmax_rows", ref, [&](const entry_point_table<T>& e) {
    std::vector<T> out = s;
    e.softmax_rows(out.data(), rows, cols, ld);
    return out;
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(plan_queries_answer_for_the_active_set, T, value_types) {
  // Tiles and scratch depend on the register width: explain() must report the active set's.
  const attention_case<T> c = attention_cases<T>().front();
  const attention_problem<T> p = c.problem(nullptr, nullptr);
  for (const kernel_variant* v : runnable_variants()) {
    const auto tiles = v->entry_points<T>().flash_attention_tiles(p);
    BOOST_TEST_MESSAGE(isa_name(v->id)
                       << ": query tiles of " << tiles.q_tile << ", key tiles of " << tiles.k_tile
                       << ", " << v->entry_points<T>().flash_attention_scratch_bytes(p)
                       << " bytes of scratch per thread");
    BOOST_TEST(tiles.q_tile > 0u);
    BOOST_TEST(tiles.k_tile > 0u);
  }
  if (!expected_for_this_process().error.empty()) return;
  const entry_point_table<T>& active = argus::kernel::active_variant().entry_points<T>();
  BOOST_TEST(argus::kernel::flash_attention_tiles(p).q_tile ==
             active.flash_attention_tiles(p).q_tile);
  BOOST_TEST(argus::kernel::flash_attention_tiles(p).k_tile ==
             active.flash_attention_tiles(p).k_tile);
  BOOST_TEST(argus::kernel::flash_attention_scratch_bytes(p) ==
             active.flash_attention_scratch_bytes(p));
}

// ---- what reports name: the set that runs ----------------------------------------------

BOOST_AUTO_TEST_CASE(explain_names_the_set_that_runs) {
  using namespace argus;
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<8>>> q(10), k(10), v(10);  // (1,2,SEQ,8)
  const auto y = attend(softmax(scores(q, k)), v);
  const expected_choice expected = expected_for_this_process();
  if (!expected.error.empty()) {
    BOOST_CHECK_EXCEPTION(explain(y, unfused), isa_error, says({expected.error}));
    BOOST_CHECK_EXCEPTION(explain(y, fused), isa_error, says({expected.error}));
    return;
  }
  for (const plan& p : {explain(y, unfused), explain(y, fused)}) {
    BOOST_TEST_MESSAGE(p);
    BOOST_TEST((p.instruction_set == expected.id));
    BOOST_TEST(p.chosen_at_run_time);
    BOOST_TEST(p.to_string().find(std::string("kernels: ") + isa_name(expected.id) + " (" +
                                  std::to_string(kernel::isa_register_bytes(expected.id)) +
                                  "-byte registers), chosen at run time\n") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(the_fma_peak_is_measured_for_the_set_that_runs) {
  const expected_choice expected = expected_for_this_process();
  if (!expected.error.empty()) {
    BOOST_CHECK_EXCEPTION(argus::bench::measure_peak(1), isa_error, says({expected.error}));
    return;
  }
  const argus::bench::fma_peak peak = argus::bench::measure_peak(1);
  BOOST_TEST_MESSAGE("FMA peak: " << peak.gflops << " GFLOP/s, " << isa_name(peak.instruction_set)
                                  << ", " << peak.float_lanes << " float lanes");
  BOOST_TEST((peak.instruction_set == expected.id));
  BOOST_TEST(peak.float_lanes == argus::kernel::isa_register_bytes(expected.id) / sizeof(float));
  BOOST_TEST(peak.gflops > 0);
  // Every set this CPU runs has a loop of its own width.
  for (const kernel_variant* v : runnable_variants()) {
    const argus::bench::fma_peak p = argus::bench::measure_peak(1, v->id);
    BOOST_TEST_MESSAGE(isa_name(v->id) << ": " << p.gflops << " GFLOP/s");
    BOOST_TEST((p.instruction_set == v->id));
    BOOST_TEST(p.float_lanes == argus::kernel::isa_register_bytes(v->id) / sizeof(float));
  }
}

}  // namespace
