// Differential test: the fused, unfused and double-precision reference evaluators on random
// attention problems -- run-time lengths 1..300, batch 1..3, the head configurations below
// (grouped-query, d_k != d_v, float and double), every mask kind at random densities or in
// the patterns of padded batches and packed documents (fully masked items and rows
// included) and two kinds of one's own (which the fused loop nest calls on each tile:
// kernel::code_mask), and values drawn normal, with logits of +-1e4, with exact ties,
// denormal, and with NaN/Inf placed in Q, K, V, the additive mask and the rows of padded
// keys. Every evaluator must agree with the reference on which outputs are finite
// (docs/reference/semantics.md) and, where they are, within a tolerance derived from the
// case (tests/support/agreement.hpp, docs/reliability.md).
//
//   ARGUS_DIFF_CASES=10000 ./unit.eval.differential   long mode (default 200 cases)
//   ARGUS_DIFF_SEED=<seed> ./unit.eval.differential   replays one case, as printed on failure
//                                                      (--log_level=message shows what it drew)
#include "../../support/agreement.hpp"
#include "../../support/random_cases.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

using namespace argus;

namespace {

using test::case_report;
using test::cfg;
using test::values;
const char* name(values v) { return test::name(v, "logits of +-1e4"); }

// The paper's heads, grouped-query (2 and 4 query heads per K/V head), d_k != d_v, d = 128
// (a width the few-row kernels fix at compile time), odd widths, and double.
using configs =
    std::tuple<cfg<float, 8, 8, 64, 64>, cfg<float, 4, 2, 16, 16>, cfg<float, 8, 2, 8, 12>,
               cfg<float, 4, 1, 12, 20>, cfg<float, 2, 2, 128, 128>, cfg<float, 3, 3, 5, 3>,
               cfg<double, 4, 2, 8, 8>, cfg<double, 3, 1, 4, 6>>;

/// A mask kind of one's own (docs/how-to/masks.md): query i attends key j iff both lie in the
/// same segment (documents packed into one sequence, or cross-attention between them).
struct same_segment {
  using mask_effect = ignores_pairs;
  const std::vector<std::size_t>* query_segment;
  const std::vector<std::size_t>* key_segment;
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return (*query_segment)[i] != (*key_segment)[j];
  }
  std::string name() const { return "same_segment"; }
};
/// An additive kind of one's own that reads the head: head h adds -slope^(h + 1) · |i - j|
/// (ALiBi's form), and -inf where i + j is a multiple of `forbid` (forbid 0: nowhere).
template <class T>
struct head_slopes {
  using mask_effect = adds_to_pairs<T>;
  double slope;
  std::size_t forbid;
  T added(std::size_t, std::size_t h, std::size_t i, std::size_t j) const {
    if (forbid != 0 && (i + j) % forbid == 0) return -std::numeric_limits<T>::infinity();
    return T(-std::pow(slope, double(h + 1)) * double(i > j ? i - j : j - i));
  }
  std::string name() const { return "head_slopes"; }
};

/// Segment ids of n positions: runs of random lengths (a mean of `mean`).
std::vector<std::size_t> segments(std::mt19937_64& g, std::size_t n, double mean) {
  std::vector<std::size_t> id(n);
  std::geometric_distribution<std::size_t> run(1.0 / mean);
  for (std::size_t i = 0, s = 0; i < n; ++s)
    for (std::size_t r = 1 + run(g); r > 0 && i < n; --r) id[i++] = s;
  return id;
}

template <class C>
struct problem {
  using T = typename C::value_type;
  using q_shape = shape<batch<>, head<C::heads>, seq<>, head_dim<C::d_k>>;
  using k_shape = shape<batch<>, head<C::kv_heads>, seq<>, head_dim<C::d_k>>;
  using v_shape = shape<batch<>, head<C::kv_heads>, seq<>, head_dim<C::d_v>>;
  tensor<T, q_shape> q;                             // (B,H,SEQ_Q,D_K)
  tensor<T, k_shape> k;                             // (B,G,SEQ_KV,D_K)
  tensor<T, v_shape> v;                             // (B,G,SEQ_KV,D_V)
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad;  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs;          // (SEQ_Q,SEQ_KV)
  tensor<T, shape<seq<>, seq<>>> add;               // (SEQ_Q,SEQ_KV)
  problem(std::size_t b, std::size_t sq, std::size_t skv)
      : q(b, sq), k(b, skv), v(b, skv), pad(b, skv), pairs(sq, skv), add(sq, skv) {}
};

template <class C>
void run_case(std::mt19937_64& g, case_report& rep) {
  using T = typename C::value_type;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto uniform = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(g);
  };
  auto chance = [&](double p) { return unit(g) < p; };

  // Extents: mostly short (squared skew), some decode-shaped, some anywhere in 1..300; the
  // work is capped so that the double reference stays fast.
  const std::size_t b = uniform(1, 3);
  std::size_t sq, skv;
  const double shape_draw = unit(g);
  if (shape_draw < 0.6) {
    sq = 1 + std::size_t(299 * std::pow(unit(g), 2)),
    skv = 1 + std::size_t(299 * std::pow(unit(g), 2));
  } else if (shape_draw < 0.8) {
    sq = uniform(1, 16), skv = uniform(256, 300);
  } else {
    sq = uniform(1, 300), skv = uniform(1, 300);
  }
  const double budget = 8e6;
  while (double(b) * C::heads * sq * skv * (C::d_k + C::d_v) > budget) (sq > skv ? sq : skv) /= 2;
  const values kind = values(uniform(0, 3));
  // 0 no mask, 1 causal + padding, 2 all four, 3 all four, merged; kinds of one's own: 4
  // same_segment with causal and padding, 5 head_slopes with padding and causal, merged.
  const int form = int(uniform(0, 5));
  // The causal mask: top-left, bottom-right, or at a random offset (past either end too); in
  // a third of the cases with a sliding window (a single key, or up to a little past seq_kv).
  causal_mask diagonal = std::array{causal, causal_lower_right(sq, skv),
                                    causal_from(std::ptrdiff_t(uniform(0, sq + skv + 4)) -
                                                std::ptrdiff_t(sq) - 2)}[uniform(0, 2)];
  if (chance(1.0 / 3)) diagonal = diagonal.windowed(chance(0.2) ? 1 : uniform(1, skv + 8));
  const std::size_t threads = uniform(1, 3);
  rep.text << "config (" << (std::is_same_v<T, float> ? "float" : "double") << ", heads "
           << C::heads << ", kv_heads " << C::kv_heads << ", d_k " << C::d_k << ", d_v " << C::d_v
           << "), batch " << b << ", seq_q " << sq << ", seq_kv " << skv << ", values "
           << name(kind) << ", masks "
           << (form == 0   ? "none"
               : form == 1 ? "causal + ignore_keys"
               : form == 4 ? "same_segment + causal + ignore_keys"
               : form == 5 ? "head_slopes + ignore_keys + causal"
                           : "all four")
           << (form >= 1 ? ", causal offset " + std::to_string(diagonal.offset) : "")
           << (form >= 1 && diagonal.window != causal_mask::every_key
                   ? ", window " + std::to_string(diagonal.window)
                   : "")
           << (form == 3 || form == 5 ? " (merged heads)" : "") << ", fused on " << threads
           << " threads";

  problem<C> p(b, sq, skv);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double qk_scale = kind == values::large_logits ? 100.0 : 1.0;  // logit std ~ scale^2
  auto fill = [&](auto& t, double s) {
    for (auto& x : t) {
      if (kind == values::ties)
        x = T(double(uniform(0, 2)) - 1.0);
      else
        x = T(s * normal(g));
    }
  };
  fill(p.q, qk_scale), fill(p.k, qk_scale), fill(p.v, 1.0);
  if (kind == values::ties)  // duplicate key rows too: equal logits across keys
    for (std::size_t x = 0; x + C::d_k < p.k.size(); x += 2 * C::d_k)
      std::copy_n(p.k.data() + x, C::d_k, p.k.data() + x + C::d_k);
  if (kind == values::denormal) {
    const double tiny = std::numeric_limits<T>::min();  // below: denormal
    for (auto& x : p.v) x = T(x * tiny * 1e-3);
    for (auto& x : p.k)
      if (chance(0.2)) x = T(tiny * 1e-2 * normal(g));
  }
  // Masks at random densities, or in the patterns of a padded batch (padding past each
  // item's length) and of packed documents (pairs across documents, 48 positions long on
  // average): tiles the fused loop nest skips whole, beside tiles it masks in part and tiles
  // it does not mask. Some items fully padded.
  const std::size_t pad_form = uniform(0, 4), pair_form = uniform(0, 3);
  const double pad_densities[] = {0.0, 0.1, 0.5, 1.0}, pair_densities[] = {0.0, 0.2, 0.9};
  for (std::size_t bb = 0; bb < b; ++bb) {
    const std::size_t length = uniform(0, skv);
    for (std::size_t j = 0; j < skv; ++j)
      p.pad(bb, j) = (pad_form == 4 ? j >= length : chance(pad_densities[pad_form])) ? 1 : 0;
  }
  if (chance(0.2)) std::fill_n(p.pad.data(), skv, std::uint8_t(1));  // item 0 fully padded
  std::vector<std::size_t> document(std::max(sq, skv));
  for (std::size_t x = 1; x < document.size(); ++x)
    document[x] = document[x - 1] + (chance(1.0 / 48) ? 1 : 0);
  for (std::size_t i = 0; i < sq; ++i)
    for (std::size_t j = 0; j < skv; ++j)
      p.pairs(i, j) =
          pair_form == 3 ? document[i] != document[j] : chance(pair_densities[pair_form]);
  for (auto& x : p.add) x = chance(0.05) ? -std::numeric_limits<T>::infinity() : T(normal(g));

  // Bad values: NaN/Inf at random places of Q, K, V and the additive mask, and in the K
  // and V rows of padded keys.
  const T bad_values[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity()};
  std::size_t placed = 0;
  if (chance(0.5)) {
    const std::size_t count = uniform(1, 4);
    for (std::size_t n = 0; n < count; ++n) {
      const T bad = bad_values[uniform(0, 2)];
      switch (uniform(0, form == 2 || form == 3 ? 3 : 2)) {
        case 0:
          p.q.data()[uniform(0, p.q.size() - 1)] = bad;
          break;
        case 1:
          p.k.data()[uniform(0, p.k.size() - 1)] = bad;
          break;
        case 2:
          p.v.data()[uniform(0, p.v.size() - 1)] = bad;
          break;
        default:
          p.add.data()[uniform(0, p.add.size() - 1)] = bad;
          break;
      }
      ++placed;
    }
  }
  if (form >= 1 && chance(0.5))
    for (std::size_t bb = 0; bb < b; ++bb)
      for (std::size_t j = 0; j < skv; ++j)
        if (p.pad(bb, j) != 0 && chance(0.5))
          for (std::size_t gg = 0; gg < C::kv_heads; ++gg) {
            p.k(bb, gg, j, uniform(0, C::d_k - 1)) = bad_values[uniform(0, 2)];
            p.v(bb, gg, j, uniform(0, C::d_v - 1)) = bad_values[uniform(0, 2)];
            placed += 2;
          }
  rep.text << ", padding "
           << (pad_form == 4 ? "past each length"
                             : "density " + std::to_string(pad_densities[pad_form]))
           << ", pairs "
           << (pair_form == 3 ? "across documents"
                              : "density " + std::to_string(pair_densities[pair_form]));
  rep.text << ", " << placed << " bad values placed";

  const double segment_length = std::array{1.0, 4.0, 40.0, 400.0}[uniform(0, 3)];
  const std::vector<std::size_t> query_segment = segments(g, sq, segment_length);
  const std::vector<std::size_t> key_segment = segments(g, skv, segment_length);
  const head_slopes<T> slopes{std::array{0.5, 0.9, 1.0}[uniform(0, 2)],
                              std::array<std::size_t, 3>{0, 3, 7}[uniform(0, 2)]};
  if (form == 4) rep.text << ", segments of mean length " << segment_length;
  if (form == 5) rep.text << ", slope " << slopes.slope << ", forbid " << slopes.forbid;
  // The largest additive term: add_to_scores' values, or head_slopes' at the longest distance.
  const double max_add =
      form == 5 ? slopes.slope * double(std::max(sq, skv)) : test::max_abs_finite(p.add);
  const double tol = test::attention_tolerance<T>(p.q, p.k, p.v, max_add);

  auto run = [&](const auto& e) {
    const auto ref = evaluate_reference(e);
    set_num_threads(threads);
    const auto f = evaluate(e, fused);
    set_num_threads(0);
    const auto un = evaluate(e, unfused);
    for (const auto& [evaluator, diff] : {std::pair{"fused", test::disagreement(f, ref, tol)},
                                          std::pair{"unfused", test::disagreement(un, ref, tol)}})
      if (!diff.empty()) {
        rep.failed = true;
        rep.text << "\n  " << evaluator << ": " << diff;
      }
  };
  const auto s = scores(p.q, p.k);
  switch (form) {
    case 0:
      run(attend(softmax(s), p.v));
      break;
    case 1:
      run(attend(softmax(mask(s, diagonal, ignore_keys(p.pad))), p.v));
      break;
    case 2:
      run(attend(softmax(mask(s, ignore_where(p.pairs), add_to_scores(p.add), diagonal,
                              ignore_keys(p.pad))),
                 p.v));
      break;
    case 3:
      run(merge_heads(attend(softmax(mask(s, add_to_scores(p.add), ignore_keys(p.pad),
                                          ignore_where(p.pairs), diagonal)),
                             p.v)));
      break;
    case 4:
      run(attend(softmax(mask(s, same_segment{&query_segment, &key_segment}, diagonal,
                              ignore_keys(p.pad))),
                 p.v));
      break;
    default:
      run(merge_heads(attend(softmax(mask(s, slopes, ignore_keys(p.pad), diagonal)), p.v)));
      break;
  }
}

/// Runs the case of `seed`; false (with the report printed) when an evaluator disagrees.
bool run_seed(std::uint64_t seed, bool verbose) {
  std::mt19937_64 g(seed);
  case_report rep;
  test::with_config<configs>(
      std::uniform_int_distribution<std::size_t>(0, std::tuple_size_v<configs> - 1)(g),
      [&]<class C>(std::type_identity<C>) { run_case<C>(g, rep); });
  if (verbose) BOOST_TEST_MESSAGE("case of seed " << seed << ": " << rep.text.str());
  if (rep.failed) {
    BOOST_ERROR("differential case with seed " << seed << " failed: " << rep.text.str()
                                               << "\n  replay: ARGUS_DIFF_SEED=" << seed
                                               << " ./build/gcc/tests/unit.eval.differential");
  }
  return !rep.failed;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_unfused_and_reference_agree_on_random_problems) {
  const auto ran = test::run_seeds("ARGUS_DIFF_SEED", "ARGUS_DIFF_CASES", 200, run_seed);
  BOOST_TEST_MESSAGE(ran.first << " differential cases, " << ran.second << " failed");
  BOOST_TEST(ran.second == 0u);
}
