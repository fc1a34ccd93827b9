// labels: threads memory
// sanitized-options: -O1
// Under TSan, the float cases that run on 1-3 threads without the long double-precision
// references (the random problems and the 5000-key decode shapes take minutes there):
// tsan-run: fully_masked_rows_give_zeros<float>
// tsan-run: causal_cross_attention<float>
// tsan-run: strided_views<float>
// tsan-run: grouped_query_attention_split_over_items<float>
#include "argus/kernel/flash_attention.hpp"

#include "argus/kernel/attention_backward.hpp"
#include "argus/kernel/cpu_caches.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/parallel.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#endif

// Every case compares flash_attention with a naive reference computed in double from the
// same inputs: materialised scores, masks, max-subtracted softmax, times V. A row whose
// keys are all masked must come out as zeros. Tolerance, elementwise:
//     |out - ref| <= tol · (1 + |ref|),   tol = 1e-5 for float, 1e-12 for double.
// Inputs are uniform in [-1, 1] (logits of a few units), or small integers with an exact
// power-of-two scale for the large-logit cases, where every logit (up to ~1e4 and beyond)
// is then exact in float too and the same bound applies.

namespace {

using argus::kernel::attention_problem;

struct config {
  std::size_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_kv = 1, d_k = 4, d_v = 4;
  bool causal = false;
  std::size_t window = 0;  // > 0 (with causal): query i sees keys i + causal_offset - window < j
  std::ptrdiff_t causal_offset = 0;         // with causal: query i sees keys j <= i + causal_offset
  double key_ignore_rate = 0;               // > 0: a key_ignore mask with this density
  double ignore_rate = 0;                   // > 0: an (i, j) ignore mask with this density
  bool additive = false;                    // an additive mask, values in [-3, 3] and a few -inf
  bool broadcast_masks = false;             // ignore / additive with zero batch and head strides
  bool projection_layout = false;           // Q, K, V, O as (batch, seq, heads · d) views
  std::size_t pad = 0;                      // extra elements at the end of every row
  bool ignore_all_keys_of_batch_0 = false;  // every row of batch item 0 fully masked
  bool integer_inputs = false;              // exact large logits
  double rise = 0;  // != 0: an additive term rise · j, logits that climb (or fall) along the keys
  double offset = 0;            // != 0: added to every logit (through the additive term)
  std::size_t bad_v_every = 0;  // > 0: V rows j with j % bad_v_every == 3 hold a NaN and a +inf
  std::size_t threads = 1;

  std::string describe() const {
    std::ostringstream s;
    s << "B=" << batch << " h=" << heads << "/" << kv_heads << " n_q=" << seq_q
      << " n_kv=" << seq_kv << " d_k=" << d_k << " d_v=" << d_v << (causal ? " causal" : "")
      << (causal ? " offset " + std::to_string(causal_offset) : "")
      << (window > 0 ? " window " + std::to_string(window) : "")
      << " key_ignore=" << key_ignore_rate << " ignore=" << ignore_rate
      << (additive ? " additive" : "") << (broadcast_masks ? " broadcast" : "")
      << (projection_layout ? " (B,S,H*D)" : " (B,H,S,D)") << " pad=" << pad
      << (ignore_all_keys_of_batch_0 ? " all-masked-b0" : "") << (integer_inputs ? " integer" : "")
      << " rise=" << rise << " offset=" << offset << " bad_v_every=" << bad_v_every
      << " threads=" << threads;
    return s.str();
  }
};

/// A strided 4-d view (outer, head, row, feature) over a buffer with padding.
struct view_layout {
  std::size_t batch_stride, head_stride, row_stride, size;
};

view_layout make_layout(const config& c, std::size_t heads, std::size_t seq, std::size_t d) {
  if (c.projection_layout) {
    const std::size_t row = heads * d + c.pad;
    return {seq * row, d, row, c.batch * seq * row};
  }
  const std::size_t row = d + c.pad;
  return {heads * seq * row, seq * row, row, c.batch * heads * seq * row};
}

template <class T>
struct result {
  double worst_ratio = 0;        // max |out - ref| / (tol · (1 + |ref|))
  bool finite = true;            // out finite wherever the reference is
  bool bad_values_reach = true;  // out not finite wherever the reference is not
  bool padding_untouched = true;
  bool masked_rows_zero = true;
};

template <class T>
result<T> run_case(const config& c, std::mt19937_64& rng) {
  // Cheap draws (the <random> distributions dominate the run time otherwise).
  auto u01 = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto unit = [&] { return 2 * u01() - 1; };
  auto value = [&] {
    return c.integer_inputs ? static_cast<T>(static_cast<int>(rng() % 25) - 12)
                            : static_cast<T>(unit());
  };

  const view_layout lq = make_layout(c, c.heads, c.seq_q, c.d_k);
  const view_layout lk = make_layout(c, c.kv_heads, c.seq_kv, c.d_k);
  const view_layout lv = make_layout(c, c.kv_heads, c.seq_kv, c.d_v);
  const view_layout lo = make_layout(c, c.heads, c.seq_q, c.d_v);
  std::vector<T> q(lq.size), k(lk.size), v(lv.size);
  for (T& x : q) x = value();
  for (T& x : k) x = value();
  for (T& x : v) x = static_cast<T>(unit());
  if (c.bad_v_every > 0)  // column 0 NaN, the last column +inf, in every kv head and batch item
    for (std::size_t b = 0; b < c.batch; ++b)
      for (std::size_t g = 0; g < c.kv_heads; ++g)
        for (std::size_t j = 3; j < c.seq_kv; j += c.bad_v_every) {
          T* row = v.data() + b * lv.batch_stride + g * lv.head_stride + j * lv.row_stride;
          row[0] = std::numeric_limits<T>::quiet_NaN();
          row[c.d_v - 1] = std::numeric_limits<T>::infinity();
        }
  std::vector<T> o(lo.size, std::numeric_limits<T>::quiet_NaN());

  attention_problem<T> p{};
  p.batch = c.batch, p.heads = c.heads, p.kv_heads = c.kv_heads;
  p.seq_q = c.seq_q, p.seq_kv = c.seq_kv, p.d_k = c.d_k, p.d_v = c.d_v;
  p.q = q.data(), p.q_batch = lq.batch_stride, p.q_head = lq.head_stride, p.q_row = lq.row_stride;
  p.k = k.data(), p.k_batch = lk.batch_stride, p.k_head = lk.head_stride, p.k_row = lk.row_stride;
  p.v = v.data(), p.v_batch = lv.batch_stride, p.v_head = lv.head_stride, p.v_row = lv.row_stride;
  p.o = o.data(), p.o_batch = lo.batch_stride, p.o_head = lo.head_stride, p.o_row = lo.row_stride;
  p.scale = c.integer_inputs ? T(8) : static_cast<T>(1.0 / std::sqrt(static_cast<double>(c.d_k)));
  p.causal = c.causal;
  p.causal_offset = c.causal_offset;
  if (c.window > 0) p.causal_window = c.window;

  std::vector<std::uint8_t> key_ignore, ignore;
  std::vector<T> additive;
  if (c.key_ignore_rate > 0 || c.ignore_all_keys_of_batch_0) {
    p.key_ignore_batch = c.seq_kv + 3;
    key_ignore.assign(c.batch * p.key_ignore_batch, 0);
    for (std::size_t b = 0; b < c.batch; ++b)
      for (std::size_t j = 0; j < c.seq_kv; ++j)
        key_ignore[b * p.key_ignore_batch + j] =
            (b == 0 && c.ignore_all_keys_of_batch_0) || u01() < c.key_ignore_rate ? 1 : 0;
    p.key_ignore = key_ignore.data();
  }
  if (c.ignore_rate > 0) {
    p.ignore_row = c.seq_kv + 2;
    p.ignore_head = c.broadcast_masks ? 0 : c.seq_q * p.ignore_row;
    p.ignore_batch = c.broadcast_masks ? 0 : c.heads * c.seq_q * p.ignore_row;
    ignore.resize((c.broadcast_masks ? 1 : c.batch * c.heads) * c.seq_q * p.ignore_row);
    for (auto& x : ignore) x = u01() < c.ignore_rate ? 1 : 0;
    p.ignore = ignore.data();
  }
  if (c.additive || c.rise != 0 || c.offset != 0) {
    p.add_row = c.seq_kv + 1;
    p.add_head = c.broadcast_masks ? 0 : c.seq_q * p.add_row;
    p.add_batch = c.broadcast_masks ? 0 : c.heads * c.seq_q * p.add_row;
    additive.resize((c.broadcast_masks ? 1 : c.batch * c.heads) * c.seq_q * p.add_row);
    for (std::size_t x = 0; x < additive.size(); ++x) {
      const double ramp = c.offset + c.rise * static_cast<double>(x % p.add_row);  // rise · j
      additive[x] = !c.additive    ? static_cast<T>(ramp)
                    : u01() < 0.05 ? -std::numeric_limits<T>::infinity()
                                   : static_cast<T>(ramp + 3 * unit());
    }
    p.additive = additive.data();
  }

  argus::set_num_threads(c.threads);
  argus::kernel::flash_attention(p);
  argus::set_num_threads(0);

  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  const double minus_inf = -std::numeric_limits<double>::infinity();
  result<T> res;
  std::vector<bool> logical(o.size(), false);
  std::vector<double> logits(c.seq_kv);
  const std::size_t group = c.heads / c.kv_heads;
  for (std::size_t b = 0; b < c.batch; ++b)
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t g = h / group;
      for (std::size_t i = 0; i < c.seq_q; ++i) {
        const T* qi = q.data() + b * p.q_batch + h * p.q_head + i * p.q_row;
        double top = minus_inf;
        for (std::size_t j = 0; j < c.seq_kv; ++j) {
          const T* kj = k.data() + b * p.k_batch + g * p.k_head + j * p.k_row;
          double s = 0;
          for (std::size_t x = 0; x < c.d_k; ++x)
            s += static_cast<double>(qi[x]) * static_cast<double>(kj[x]);
          s *= static_cast<double>(p.scale);
          if (p.additive) s += additive[b * p.add_batch + h * p.add_head + i * p.add_row + j];
          const bool masked =
              (c.causal &&
               (static_cast<std::ptrdiff_t>(j) > static_cast<std::ptrdiff_t>(i) + c.causal_offset ||
                (c.window > 0 && static_cast<std::ptrdiff_t>(j + c.window) <=
                                     static_cast<std::ptrdiff_t>(i) + c.causal_offset))) ||
              (p.key_ignore && key_ignore[b * p.key_ignore_batch + j]) ||
              (p.ignore && ignore[b * p.ignore_batch + h * p.ignore_head + i * p.ignore_row + j]);
          logits[j] = masked ? minus_inf : s;
          top = std::max(top, logits[j]);
        }
        const std::size_t o_off = b * p.o_batch + h * p.o_head + i * p.o_row;
        std::vector<double> ref(c.d_v, 0.0);
        if (top != minus_inf) {
          double sum = 0;
          for (std::size_t j = 0; j < c.seq_kv; ++j) {
            if (logits[j] == minus_inf) continue;  // a masked key adds nothing, whatever V holds
            const double e = std::exp(logits[j] - top);
            sum += e;
            const T* vj = v.data() + b * p.v_batch + g * p.v_head + j * p.v_row;
            for (std::size_t x = 0; x < c.d_v; ++x) ref[x] += e * static_cast<double>(vj[x]);
          }
          for (double& r : ref) r /= sum;
        }
        for (std::size_t x = 0; x < c.d_v; ++x) {
          const double out = static_cast<double>(o[o_off + x]);
          logical[o_off + x] = true;
          if (!std::isfinite(ref[x])) {  // a bad V value of a key the row sees
            if (std::isfinite(out)) res.bad_values_reach = false;
            continue;
          }
          if (!std::isfinite(out)) {
            res.finite = false;
            continue;
          }
          if (top == minus_inf && out != 0.0) res.masked_rows_zero = false;
          res.worst_ratio =
              std::max(res.worst_ratio, std::abs(out - ref[x]) / (tol * (1 + std::abs(ref[x]))));
        }
      }
    }
  for (std::size_t x = 0; x < o.size(); ++x)
    if (!logical[x] && !std::isnan(o[x])) res.padding_untouched = false;
  return res;
}

template <class T>
void check(const config& c, std::mt19937_64& rng) {
  const result<T> r = run_case<T>(c, rng);
  BOOST_TEST_INFO(c.describe());
  BOOST_TEST(r.finite);
  BOOST_TEST_INFO(c.describe());
  BOOST_TEST(r.bad_values_reach);
  BOOST_TEST_INFO(c.describe());
  BOOST_TEST(r.padding_untouched);
  BOOST_TEST_INFO(c.describe());
  BOOST_TEST(r.masked_rows_zero);
  BOOST_TEST_INFO(c.describe() << " worst error / tolerance = " << r.worst_ratio);
  BOOST_TEST(r.worst_ratio <= 1.0);
}

/// A random configuration from the space the brief lists.
config random_config(std::mt19937_64& rng, std::size_t index) {
  static const std::size_t head_pairs[][2] = {{1, 1}, {4, 4}, {6, 2}, {8, 1}};
  static const std::size_t dims[] = {4, 12, 20, 64, 128};
  static const std::size_t seqs[] = {1,  2,  7,   16,  31,  32,  33,  45, 63,
                                     64, 65, 100, 127, 130, 191, 257, 300};
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  std::bernoulli_distribution coin(0.5), rare(0.2);
  config c;
  c.batch = 1 + pick(3);
  const auto& hp = head_pairs[pick(4)];
  c.heads = hp[0], c.kv_heads = hp[1];
  c.d_k = dims[pick(5)];
  c.d_v = coin(rng) ? c.d_k : dims[pick(5)];
  c.seq_q = seqs[pick(std::size(seqs))];
  c.seq_kv = coin(rng) ? c.seq_q : seqs[pick(std::size(seqs))];
  // Keep the reference cheap: shrink the biggest problems.
  while (c.batch * c.heads * c.seq_q * c.seq_kv * (c.d_k + c.d_v) > 40'000'000)
    c.seq_q = (c.seq_q + 1) / 2;
  c.causal = coin(rng);
  if (rare(rng) || rare(rng)) c.key_ignore_rate = coin(rng) ? 0.3 : 0.9;
  if (rare(rng)) c.ignore_rate = coin(rng) ? 0.2 : 0.95;
  c.additive = rare(rng);
  c.broadcast_masks = coin(rng);
  c.projection_layout = coin(rng);
  c.pad = coin(rng) ? 0 : 1 + pick(5);
  c.threads = 1 + index % 3;
  return c;
}

}  // namespace

using scalar_types = std::tuple<float, double>;

BOOST_AUTO_TEST_CASE_TEMPLATE(matches_the_reference_on_random_problems, T, scalar_types) {
  std::mt19937_64 rng(20240611);
  const std::size_t cases = std::is_same_v<T, float> ? 160 : 60;
  for (std::size_t n = 0; n < cases; ++n) check<T>(random_config(rng, n), rng);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(every_mask_kind_alone_and_combined, T, scalar_types) {
  std::mt19937_64 rng(7);
  for (int kind = 0; kind < 16; ++kind)
    for (std::size_t d : {12, 64}) {
      config c;
      c.batch = 2, c.heads = 6, c.kv_heads = 2, c.seq_q = 70, c.seq_kv = 70, c.d_k = d, c.d_v = d;
      c.causal = kind & 1;
      c.key_ignore_rate = kind & 2 ? 0.25 : 0;
      c.ignore_rate = kind & 4 ? 0.25 : 0;
      c.additive = kind & 8;
      c.broadcast_masks = kind % 3 == 0;
      c.threads = 1 + kind % 3;
      check<T>(c, rng);
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fully_masked_rows_give_zeros, T, scalar_types) {
  std::mt19937_64 rng(11);
  for (std::size_t threads : {1, 2, 3})
    for (std::size_t n_kv : {5, 70, 600}) {
      config c;
      c.batch = 2, c.heads = 4, c.kv_heads = 4, c.seq_q = n_kv > 100 ? 3 : 40, c.seq_kv = n_kv;
      c.d_k = 64, c.d_v = 20;
      c.ignore_all_keys_of_batch_0 = true;
      c.threads = threads;
      check<T>(c, rng);
      c.ignore_all_keys_of_batch_0 = false;
      c.ignore_rate = 0.97;  // many rows lose every key
      check<T>(c, rng);
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(causal_cross_attention, T, scalar_types) {
  std::mt19937_64 rng(13);
  for (auto [n_q, n_kv] :
       {std::pair<std::size_t, std::size_t>{40, 100}, {100, 40}, {33, 200}, {200, 33}, {1, 50}})
    for (std::size_t threads : {1, 2}) {
      config c;
      c.heads = 4, c.kv_heads = 2, c.seq_q = n_q, c.seq_kv = n_kv, c.d_k = 64, c.d_v = 64;
      c.causal = true;
      c.threads = threads;
      check<T>(c, rng);
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(strided_views, T, scalar_types) {
  std::mt19937_64 rng(17);
  for (bool projection : {false, true})
    for (std::size_t pad : {0, 1, 16})
      for (std::size_t d : {4, 64, 128}) {
        config c;
        c.batch = 2, c.heads = 4, c.kv_heads = 2, c.seq_q = 37, c.seq_kv = 53, c.d_k = d,
        c.d_v = d == 4 ? 12 : d;
        c.projection_layout = projection, c.pad = pad, c.threads = 2;
        check<T>(c, rng);
      }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(decode_shapes_split_the_keys, T, scalar_types) {
  std::mt19937_64 rng(19);
  const std::size_t long_kv = std::is_same_v<T, float> ? 5000 : 2000;
  for (std::size_t n_q : {1, 4, 16})
    for (std::size_t n_kv : {std::size_t{257}, std::size_t{1000}, long_kv})
      for (std::size_t threads : {1, 2, 3}) {
        config c;
        c.batch = n_kv > 1000 ? 1 : 2;
        c.heads = 8, c.kv_heads = n_q == 4 ? 1 : (n_q == 1 ? 8 : 2);
        c.seq_q = n_q, c.seq_kv = n_kv, c.d_k = 64, c.d_v = n_q == 16 ? 20 : 64;
        c.key_ignore_rate = n_kv == 1000 ? 0.5 : 0;
        c.additive = n_kv == 257;
        c.projection_layout = n_q == 4;
        c.threads = threads;
        check<T>(c, rng);
      }
  // One head, one query: only the key split can use a second thread.
  for (std::size_t threads : {1, 2, 3}) {
    config c;
    c.seq_q = 1, c.seq_kv = long_kv, c.d_k = 128, c.d_v = 128, c.threads = threads;
    check<T>(c, rng);
    c.ignore_all_keys_of_batch_0 = true;  // every chunk fully masked
    check<T>(c, rng);
  }
}

// Few rows take score_dots: four rows at a time, then two, then one, each block of keys one
// register of (key, row) sums (transpose_sum). Every row count a decode item can hand it, a
// group of query heads over one K/V head: 1 to dot_rows rows, head widths that fill whole
// registers or leave a partial one, keys that fill the last block of keys or not.
BOOST_AUTO_TEST_CASE_TEMPLATE(every_row_count_of_few_rows, T, scalar_types) {
  namespace kd = argus::kernel::detail;
  std::mt19937_64 rng(31);
  constexpr std::size_t most = kd::flash_blocking<T>::dot_rows;
  std::size_t checked = 0;
  for (std::size_t group = 1; group <= most; ++group)
    for (const std::size_t d : {std::size_t{20}, std::size_t{64}, std::size_t{72}}) {
      config c;
      c.heads = group, c.kv_heads = 1, c.seq_q = 1, c.seq_kv = 61 + group, c.d_k = d,
      c.d_v = d == 20 ? 24 : d;
      c.threads = 1 + group % 2;
      check<T>(c, rng);
      ++checked;
    }
  BOOST_TEST(checked == most * 3);
}

// Every decode item fetches its K and V ahead (key_stream) as it scores them, few rows in
// score_dots and rows on lanes in score_tile, 8 KiB of K past the last key too, and few rows V
// again as each block of rows of value_tile reads it (64-256 keys on, past the last key too):
// the same result as the reference, with keys that end mid-tile and mid-block, contexts
// shorter than the fetch distances and longer, V rows that end mid-register (d_v 72), one row
// a K/V head and groups of more rows than a value block holds (8), on one and two threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(decode_items_fetch_ahead, T, scalar_types) {
  namespace kd = argus::kernel::detail;
  std::mt19937_64 rng(37);
  std::size_t on_lanes = 0, few = 0;
  for (std::size_t threads : {1, 2})
    for (const std::size_t heads : {1, 2, 4, 8, 24, 40})
      for (const std::size_t seq_kv : {13, 131, 4099}) {
        config c;
        c.heads = heads, c.kv_heads = heads == 40 ? 2 : 1, c.seq_q = 1, c.seq_kv = seq_kv;
        c.d_k = 128, c.d_v = heads == 2 || heads == 24 ? 72 : 128;
        c.threads = threads;
        attention_problem<T> p{};
        p.batch = 1, p.heads = c.heads, p.kv_heads = c.kv_heads, p.seq_q = 1, p.seq_kv = seq_kv;
        p.d_k = c.d_k, p.d_v = c.d_v;
        BOOST_TEST(kd::decode_shaped(p));
        (c.heads / c.kv_heads > kd::flash_blocking<T>::dot_rows ? on_lanes : few) += 1;
        check<T>(c, rng);
      }
  BOOST_TEST(on_lanes + few == 36);
  BOOST_TEST(on_lanes >= 12);  // 20 and 24 rows: more than dot_rows on every target
  BOOST_TEST(few >= 6);        // 1 row: at most dot_rows on every target (double on SSE2: 1)
}

// Decode items fetch K and V into L1 on cores with an L1d of 48 KiB or more and into L2 on
// smaller or unknown ones (key_stream, argus::detail::roomy_l1d); the size is the C library's,
// read once; roomy_l1d_as overrides it for a scope, and both choices decode alike.
BOOST_AUTO_TEST_CASE(fetch_level_follows_the_l1d) {
  namespace ad = argus::detail;
  BOOST_TEST(!ad::roomy_l1d(0));
  BOOST_TEST(!ad::roomy_l1d(std::size_t{32} * 1024));
  BOOST_TEST(!ad::roomy_l1d(std::size_t{48} * 1024 - 64));
  BOOST_TEST(ad::roomy_l1d(std::size_t{48} * 1024));
  BOOST_TEST(ad::roomy_l1d(std::size_t{64} * 1024));
  const std::size_t l1d = ad::l1d_bytes();
  BOOST_TEST(ad::l1d_bytes() == l1d);
  BOOST_TEST(ad::roomy_l1d() == ad::roomy_l1d(l1d));
  BOOST_TEST((l1d == 0 || (l1d >= 4096 && l1d <= (std::size_t{16} << 20))));
#if defined(__linux__) && defined(_SC_LEVEL1_DCACHE_SIZE)
  const long reported = ::sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (reported >= 4096 && reported <= (long{16} << 20))
    BOOST_TEST(l1d == static_cast<std::size_t>(reported));
  else
    BOOST_TEST(l1d == 0);
#endif
  BOOST_TEST_MESSAGE("L1d " << l1d << " bytes: data read once is fetched into "
                            << (ad::roomy_l1d() ? "L1" : "L2"));
  {
    const ad::roomy_l1d_as outer(!ad::roomy_l1d(l1d));
    BOOST_TEST(ad::roomy_l1d() == !ad::roomy_l1d(l1d));
    {
      const ad::roomy_l1d_as inner(true);
      BOOST_TEST(ad::roomy_l1d());
    }
    BOOST_TEST(ad::roomy_l1d() == !ad::roomy_l1d(l1d));
  }
  BOOST_TEST(ad::roomy_l1d() == ad::roomy_l1d(l1d));
  // Decode items (K and V streamed) under both choices, rows on lanes and few rows.
  std::mt19937_64 rng(41);
  for (const bool roomy : {false, true}) {
    const ad::roomy_l1d_as as(roomy);
    for (const std::size_t heads : {4, 40}) {
      config c;
      c.heads = heads, c.kv_heads = 2, c.seq_q = 1, c.seq_kv = 4099, c.d_k = 128, c.d_v = 128;
      c.threads = 2;
      check<float>(c, rng);
    }
  }
}

// A thread's first item of each K/V head in a call fetches that head's K and V ahead as it
// scores (fetch_if_first_of_pair: they come from L3 or memory); its next items of the head,
// which find them in its L2, do not. Each call and each thread keeps its own record.
BOOST_AUTO_TEST_CASE(a_threads_first_item_of_a_kv_head_fetches_ahead) {
  namespace kd = argus::kernel::detail;
  const std::uint64_t call = kd::next_items_call();
  BOOST_TEST(kd::next_items_call() > call);
  BOOST_TEST(kd::first_of_pair(call, 3));
  BOOST_TEST(!kd::first_of_pair(call, 3));
  BOOST_TEST(kd::first_of_pair(call, 4));
  BOOST_TEST(kd::first_of_pair(call, 3));      // back to a head another has followed: cold again
  BOOST_TEST(kd::first_of_pair(call + 1, 3));  // the same head in a new call
  BOOST_TEST(!kd::first_of_pair(call + 1, 3));
  bool other_thread = false;
  std::thread([&] { other_thread = kd::first_of_pair(call + 1, 3); }).join();
  BOOST_TEST(other_thread);
  // The pair of an item is (batch item, K/V head); the level is the caller's.
  attention_problem<float> p{};
  p.kv_heads = 4;
  const auto item = [&](std::size_t b, std::size_t g) {
    kd::flash_item<float> it{};
    it.p = &p, it.b = b, it.g = g;
    return it;
  };
  const std::uint64_t next = kd::next_items_call();
  kd::flash_item<float> first = item(1, 2), again = item(1, 2), other_batch = item(2, 2),
                        other_head = item(2, 1);
  kd::fetch_if_first_of_pair(first, next, true);
  BOOST_TEST((first.streams_keys && first.fetches_into_l1));
  kd::fetch_if_first_of_pair(again, next, true);
  BOOST_TEST(!again.streams_keys);
  kd::fetch_if_first_of_pair(other_batch, next, false);
  BOOST_TEST((other_batch.streams_keys && !other_batch.fetches_into_l1));
  kd::fetch_if_first_of_pair(other_head, next, false);
  BOOST_TEST(other_head.streams_keys);
  // Prefill, whose first items now stream, under both fetch levels: as the reference.
  std::mt19937_64 rng(43);
  for (const bool roomy : {false, true}) {
    const argus::detail::roomy_l1d_as as(roomy);
    for (const std::size_t threads : {1, 2})
      for (const bool causal : {false, true}) {
        config c;
        c.batch = 2, c.heads = 4, c.kv_heads = 2, c.seq_q = 130, c.seq_kv = 203, c.d_k = 64,
        c.d_v = 64, c.causal = causal, c.threads = threads;
        check<float>(c, rng);
      }
  }
}

// The passes of value_tile split each V row's bytes into blocks of col_vectors registers (the
// last one shorter); each pass asks for the lines that start in its bytes of a row further on
// (key_stream::fetch_values): over the passes, each 64-byte step of the row's d_v elements
// once, none past them (the padding to whole registers), whatever the register and block
// widths, for rows of any stride. The rows further on: 64 keys from 4 rows on, as many more
// for fewer rows, whose passes spend fewer multiply-adds on a key.
BOOST_AUTO_TEST_CASE_TEMPLATE(value_passes_fetch_each_line_of_a_row_once, T, scalar_types) {
  namespace kd = argus::kernel::detail;
  using blocking = kd::flash_blocking<T>;
  constexpr std::size_t w = blocking::width, cb = blocking::col_vectors * w;
  for (const std::size_t d_v : {1, 7, 8, 16, 24, 40, 72, 128, 136, 200, 256})
    for (const std::size_t row_pad : {0, 3, 64}) {
      const std::size_t v_row = (d_v + row_pad) * sizeof(T), v_bytes = d_v * sizeof(T);
      const std::uintptr_t v = 4096;
      const kd::key_stream stream{0, v, 100, 0, v_row, 0, v_bytes, 0, false};
      const std::size_t dvp = blocking::padded(d_v);
      for (const std::size_t j : {0, 5, 99, 355}) {
        const std::uintptr_t row = v + j * v_row;
        std::vector<std::size_t> lines;  // offsets in the row, over every pass
        for (std::size_t c = 0; c < dvp; c += cb) {
          const std::size_t cvs = std::min(cb, dvp - c) / w;  // value_tile's registers of the pass
          stream.value_lines(j, c * sizeof(T), (c + cvs * w) * sizeof(T),
                             [&](std::uintptr_t a) { lines.push_back(a - row); });
        }
        std::vector<std::size_t> expected;
        for (std::size_t x = 0; x < v_bytes; x += 64) expected.push_back(x);
        std::sort(lines.begin(), lines.end());
        BOOST_TEST(lines == expected, "d_v " << d_v << ", row of " << v_row << " bytes, key " << j);
      }
    }
  BOOST_TEST(kd::value_fetch_ahead_keys(0) == 256);
  BOOST_TEST(kd::value_fetch_ahead_keys(1) == 256);
  BOOST_TEST(kd::value_fetch_ahead_keys(2) == 128);
  for (std::size_t rows = 1; rows <= 4; ++rows)
    BOOST_TEST(kd::value_fetch_ahead_keys(rows) * rows >= 255);  // about as long a lead
  for (const std::size_t rows : {4, 5, 8, 16, 64})
    BOOST_TEST(kd::value_fetch_ahead_keys(rows) == 64);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(grouped_query_attention_split_over_items, T, scalar_types) {
  std::mt19937_64 rng(29);
  for (std::size_t threads : {1, 2, 3})
    for (std::size_t n_q : {5, 40, 64}) {
      // batch 1, one K/V head: few items, so the query heads of the group are spread out.
      config c;
      c.heads = 8, c.kv_heads = 1, c.seq_q = n_q, c.seq_kv = 90, c.d_k = 64, c.d_v = 64;
      c.causal = n_q == 40, c.key_ignore_rate = n_q == 64 ? 0.3 : 0;
      c.threads = threads;
      check<T>(c, rng);
    }
  // Decode with more rows than one tile holds: 8 query heads × 16 queries on one K/V head.
  for (std::size_t threads : {1, 2}) {
    config c;
    c.heads = 8, c.kv_heads = 1, c.seq_q = 16, c.seq_kv = 700, c.d_k = 128, c.d_v = 64;
    c.threads = threads;
    check<T>(c, rng);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(any_head_width_works, T, scalar_types) {
  std::mt19937_64 rng(31);
  for (std::size_t d_k : {1, 2, 17, 33, 96})
    for (std::size_t d_v : {1, 31, 48}) {
      config c;
      c.batch = 2, c.heads = 3, c.kv_heads = 1, c.seq_q = 37, c.seq_kv = 41, c.d_k = d_k,
      c.d_v = d_v;
      c.causal = d_v == 31;
      c.threads = 2;
      check<T>(c, rng);
      c.seq_q = 3, c.seq_kv = 300;  // decode path
      check<T>(c, rng);
    }
}

// Every output width from 1 to 13 and around 64: each remainder of the output's register
// blocks (lane_value_block takes 5 columns of d_v at a time on AVX2 and the portable path, 6
// on AVX-512; value_block whole registers of d_v), on tiles of many rows (queries on lanes,
// full and half-empty tiles), of few rows (d_v on lanes), and under padding and additive
// masks.
BOOST_AUTO_TEST_CASE_TEMPLATE(every_remainder_of_the_output_width, T, scalar_types) {
  std::mt19937_64 rng(37);
  std::vector<std::size_t> widths;
  for (std::size_t d = 1; d <= 13; ++d) widths.push_back(d);
  for (std::size_t d : {63, 65, 70}) widths.push_back(d);
  for (std::size_t d_v : widths) {
    config c;
    c.batch = 1, c.heads = 2, c.kv_heads = 1, c.seq_q = 77, c.seq_kv = 130, c.d_k = 8, c.d_v = d_v;
    c.causal = d_v % 2 == 0;
    c.threads = 1 + d_v % 2;
    check<T>(c, rng);
    c.seq_q = 3;  // few rows per tile
    check<T>(c, rng);
    c.seq_q = 40, c.causal = false, c.key_ignore_rate = 0.3, c.additive = true;
    check<T>(c, rng);
  }
}

// Finite logits near the largest value of T still give the softmax: here one key's logit
// beats every other by 9 % of T's maximum, so its weight is 1, the others' 0, and the
// output is exactly its V row, on the tiled path (20 queries) and the decode path (1 query,
// keys split over threads). The winner sits mid-sequence, so the running maximum grows by
// a huge step; nothing on the way may overflow to infinity (m · log2 e would, for float).
BOOST_AUTO_TEST_CASE_TEMPLATE(logits_near_the_largest_value_give_the_softmax, T, scalar_types) {
  const T big = std::sqrt(std::numeric_limits<T>::max());
  const std::size_t keys = 300, winner = 150, d_v = 4;
  std::vector<T> q(20, T(0.9) * big), k(keys), v(keys * d_v), o(20 * d_v, T(-1));
  for (std::size_t j = 0; j < keys; ++j) {
    k[j] = j == winner ? T(0.9) * big : (j % 2 == 0 ? T(0.8) * big : T(-0.5) * big);
    for (std::size_t c = 0; c < d_v; ++c) v[j * d_v + c] = static_cast<T>(j + c);
  }
  for (std::size_t rows : {20, 1}) {
    attention_problem<T> p{};
    p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = rows, p.seq_kv = keys, p.d_k = 1;
    p.d_v = d_v, p.scale = T(1);
    p.q = q.data(), p.q_row = 1, p.k = k.data(), p.k_row = 1, p.v = v.data(), p.v_row = d_v;
    p.o = o.data(), p.o_row = d_v;
    for (unsigned threads : {1u, 2u}) {
      argus::set_num_threads(threads);
      std::fill(o.begin(), o.end(), T(-1));
      argus::kernel::flash_attention(p);
      BOOST_TEST_INFO("rows " << rows << ", threads " << threads);
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t c = 0; c < d_v; ++c)
          BOOST_TEST(o[i * d_v + c] == static_cast<T>(winner + c));
    }
  }
  argus::set_num_threads(0);
}

// The backward of the same problem: P recomputed from the stored lse is exactly one-hot (the
// winner's logit equals its lse), so dV's winner row is the sum of dO's rows, every other
// gradient element 0: on the path that recomputes S in registers (no mask) and on the one
// that masks a stored S (an additive mask of zeros), tiled and one-row, on 1 and 2 threads.
// P = e^(S − lse) must not form lse · log2 e, which passes T's largest value here.
BOOST_AUTO_TEST_CASE_TEMPLATE(logits_near_the_largest_value_give_the_gradients, T, scalar_types) {
  const T big = std::sqrt(std::numeric_limits<T>::max());
  const std::size_t keys = 300, winner = 150, d_v = 4;
  std::vector<T> q(20, T(0.9) * big), k(keys), v(keys * d_v), o(20 * d_v), lse(20);
  std::vector<T> d_o(20 * d_v, T(1)), d_q(20), d_k(keys), d_v_out(keys * d_v), zeros(20 * keys);
  for (std::size_t j = 0; j < keys; ++j) {
    k[j] = j == winner ? T(0.9) * big : (j % 2 == 0 ? T(0.8) * big : T(-0.5) * big);
    for (std::size_t c = 0; c < d_v; ++c) v[j * d_v + c] = static_cast<T>(j + c);
  }
  for (std::size_t rows : {20, 1})
    for (bool masked : {false, true})
      for (unsigned threads : {1u, 2u}) {
        argus::set_num_threads(threads);
        argus::kernel::attention_backward_problem<T> bp{};
        attention_problem<T>& p = bp.f;
        p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = rows, p.seq_kv = keys, p.d_k = 1;
        p.d_v = d_v, p.scale = T(1);
        p.q = q.data(), p.q_row = 1, p.k = k.data(), p.k_row = 1, p.v = v.data(), p.v_row = d_v;
        p.o = o.data(), p.o_row = d_v, p.lse = lse.data(), p.lse_head = rows;
        if (masked) p.additive = zeros.data(), p.add_row = keys;
        argus::kernel::flash_attention(p);
        bp.lse = lse.data(), bp.d_o = d_o.data();
        bp.d_q = d_q.data(), bp.d_k = d_k.data(), bp.d_v = d_v_out.data();
        std::fill(d_q.begin(), d_q.end(), T(-1));
        std::fill(d_k.begin(), d_k.end(), T(-1));
        std::fill(d_v_out.begin(), d_v_out.end(), T(-1));
        argus::kernel::flash_attention_backward(bp);
        BOOST_TEST_INFO("rows " << rows << ", masked " << masked << ", threads " << threads);
        BOOST_TEST(lse[0] == q[0] * k[winner]);
        for (std::size_t i = 0; i < rows; ++i) BOOST_TEST(d_q[i] == T(0));
        for (std::size_t j = 0; j < keys; ++j) {
          BOOST_TEST(d_k[j] == T(0));
          for (std::size_t c = 0; c < d_v; ++c)
            BOOST_TEST(d_v_out[j * d_v + c] == (j == winner ? static_cast<T>(rows) : T(0)));
        }
      }
  argus::set_num_threads(0);
}

// Lazy rescaling (softmax_step moves a running maximum only when a tile's maximum passes it
// by more than rescale_slack): logits that climb along the keys by less than the slack in
// all (the first tile's maximum stays, weights grow past 1), by about a tile's worth of
// slack every few tiles, by more than the slack within each tile, and that fall; on the
// tiled and the decode path, with a causal mask, on 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(running_maxima_that_rise_across_tiles, T, scalar_types) {
  std::mt19937_64 rng(20261123);
  for (double rise : {0.004, 0.03, 0.12, -0.05})
    for (bool causal : {false, true}) {
      config c;
      c.heads = 2, c.kv_heads = 1, c.d_k = c.d_v = 64;
      c.seq_q = 70, c.seq_kv = 500, c.causal = causal, c.rise = rise;
      c.threads = causal ? 2 : 1;
      check<T>(c, rng);
      c.seq_q = 1, c.seq_kv = 600, c.causal = false;  // decode path: key chunks merged
      check<T>(c, rng);
    }
}

// Under a causal mask a query tile of four registers of queries (AVX-512: 64 float rows, 32
// double) scores and sums the keys that only the upper half of its rows reach with that half
// alone (halves_of). The lengths make tiles that start past the lower half's reach (no
// key of the tile for it: at d 64, float's tile of keys 96-191 for rows 64-127; with rising
// logits the upper half's maximum moves there, and its accumulators must be rescaled all the
// same), tiles that end a few keys past it (d 128: tiles of 60 keys) and sets of fewer rows
// than a tile; rows of a group's two heads, on 1 and 2 threads. Targets of two registers of
// queries compute whole tiles, and check the same outputs.
BOOST_AUTO_TEST_CASE_TEMPLATE(causal_diagonal_tiles_split_their_lanes, T, scalar_types) {
  std::mt19937_64 rng(29);
  for (std::size_t n : {128, 200, 301})
    for (std::size_t d : {20, 64, 128})
      for (double rise : {0.0, 0.6, -0.05}) {  // 0.6: past the slack within 10 keys
        config c;
        c.heads = 2, c.kv_heads = 1, c.seq_q = n, c.seq_kv = n, c.d_k = d, c.d_v = d;
        c.causal = true, c.rise = rise, c.threads = 1 + n % 2;
        check<T>(c, rng);
      }
}

// The same at a window's start, where the keys before the upper half's windows are the lower
// half's alone: windows shorter than half a tile (the keys both halves see only a few), about a
// tile and longer, diagonals off the main one (causal_offset), falling and rising
// logits (a rescale with keys of the lower half's alone first in the tile).
BOOST_AUTO_TEST_CASE_TEMPLATE(causal_windows_split_their_lanes, T, scalar_types) {
  std::mt19937_64 rng(31);
  for (std::size_t window : {5, 40, 100, 190})
    for (std::ptrdiff_t offset : {0, 7, -20})
      for (double rise : {0.0, 0.6, -0.6}) {
        config c;
        c.heads = 2, c.kv_heads = 1, c.seq_q = 230, c.seq_kv = 250, c.d_k = 64, c.d_v = 64;
        c.causal = true, c.window = window, c.causal_offset = offset, c.rise = rise;
        c.threads = offset == 7 ? 2 : 1;
        check<T>(c, rng);
      }
}

// Under a window a set of query rows whose windows start inside a tile of keys scores that
// tile from the set's first window on (run_item's plan_set): V rows that hold a NaN or an
// infinity (add_unclean_values) reach the rows whose windows hold them and no other, those
// before the set's first window included; windows shorter and longer than a tile, off the
// main diagonal, on 1 and 2 threads.
BOOST_AUTO_TEST_CASE_TEMPLATE(non_finite_values_under_sliding_windows, T, scalar_types) {
  std::mt19937_64 rng(37);
  for (std::size_t window : {5, 40, 100, 190})
    for (std::ptrdiff_t offset : {0, -20}) {
      config c;
      c.heads = 2, c.kv_heads = 1, c.seq_q = 300, c.seq_kv = 300, c.d_k = 64, c.d_v = 64;
      c.causal = true, c.window = window, c.causal_offset = offset, c.bad_v_every = 11;
      c.threads = window == 40 ? 2 : 1;
      check<T>(c, rng);
    }
}

// A running maximum that stays where the first tile put it while many tiles follow, at
// logits of a few hundred to a few thousand (below fold_bound, where m · log2 e is rounded
// once per column): every later tile must leave the row's sum as it is, or the output drifts
// by the rounding of m · log2 e once per tile (it did: 2^(that rounding) multiplied the sum,
// not the accumulator, before softmax_step set the factor to exactly 1 where m stays).
BOOST_AUTO_TEST_CASE_TEMPLATE(a_maximum_that_stays_over_many_tiles, T, scalar_types) {
  std::mt19937_64 rng(20261129);
  for (double offset : {300.0, 1000.0, 1900.0})
    for (double rise : {0.0, -0.002}) {
      config c;
      c.heads = 1, c.kv_heads = 1, c.d_k = c.d_v = 64;
      c.seq_q = 40, c.seq_kv = 1500, c.offset = offset, c.rise = rise;
      check<T>(c, rng);
    }
}

BOOST_AUTO_TEST_CASE(no_keys_gives_zeros_and_empty_problems_do_nothing) {
  std::vector<float> q(8, 1.0f), o(8, 7.0f);
  attention_problem<float> p{};
  p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = 2, p.seq_kv = 0, p.d_k = 4, p.d_v = 4;
  p.q = q.data(), p.q_row = 4, p.k = q.data(), p.k_row = 4, p.v = q.data(), p.v_row = 4;
  p.o = o.data(), p.o_row = 4, p.scale = 0.5f;
  argus::kernel::flash_attention(p);
  for (float x : o) BOOST_TEST(x == 0.0f);
  std::fill(o.begin(), o.end(), 7.0f);
  p.seq_kv = 2, p.seq_q = 0;
  argus::kernel::flash_attention(p);
  for (float x : o) BOOST_TEST(x == 7.0f);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(large_logits_stay_finite_and_exact, T, scalar_types) {
  std::mt19937_64 rng(23);
  for (std::size_t d : {4, 64, 128})
    for (bool causal : {false, true}) {
      config c;
      c.batch = 1, c.heads = 2, c.kv_heads = 1, c.seq_q = 50, c.seq_kv = 50, c.d_k = d, c.d_v = 64;
      c.causal = causal, c.integer_inputs = true, c.threads = 2;
      check<T>(c, rng);
      c.seq_q = 1, c.seq_kv = 700;  // decode path
      check<T>(c, rng);
    }
}

// 2^x for x <= 0 (the softmax's exponential, on (s - m) · log2 e; the backward's on
// (S - lse) · log2 e) against std::exp2 in double, down to the smallest normal result 2^-126,
// lane by lane, one register and four at once, and at the edges: exactly 0 from -126.5 down
// to -inf, NaN for NaN; positive arguments up to the lazy rescaling's slack (a running
// maximum left up to rescale_slack below the scores) and slightly beyond stay accurate.
BOOST_AUTO_TEST_CASE(base_2_exponential_of_nonpositive_arguments) {
  using V = argus::kernel::simd<float>;
  using argus::kernel::detail::exp2_nonpositive;
  const double slack = argus::kernel::detail::rescale_slack<double> * std::numbers::log2e;
  BOOST_TEST(slack == 8.0, boost::test_tools::tolerance(1e-12));
  double worst = 0;  // relative error against std::exp2 in double
  const auto check = [&](float x) {
    const double ref = std::exp2(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp2_nonpositive(V::broadcast(x))[0] - ref) / ref);
  };
  for (int step = -16100; step <= 252000; ++step)
    check(-0.0005f * static_cast<float>(step));  // from +8.05 to -126
  // Arguments just below 0 and just below each integer, where x - floor(x) lies near 1 (on
  // AVX-512 DQ the reduction's fraction, which rounds to 1 above -2^-25).
  for (float x = -1e-3f; x < -1e-38f; x *= 0.75f) check(x);
  for (int k = 0; k >= -125; --k) {
    float x = static_cast<float>(k);
    for (int ulp = 0; ulp < 4; ++ulp)
      check(x = std::nextafter(x, -std::numeric_limits<float>::infinity()));
  }
  BOOST_TEST(worst < 3e-7);  // a few ulp
  for (float x : {-0x1p-26f, -0x1p-30f, -1e-30f, -std::numeric_limits<float>::denorm_min()})
    BOOST_TEST(exp2_nonpositive(V::broadcast(x))[0] == 1.0f);  // 2^x rounds to 1
  V four[4];
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t u = 0; u < V::width; ++u)
      four[i].v[u] = -0.9f * static_cast<float>(i * V::width + u);  // to -57 on AVX-512
  V lanes = four[1];
  const V e = exp2_nonpositive(lanes);
  exp2_nonpositive(four);
  for (std::size_t u = 0; u < V::width; ++u) {
    const double ref = std::exp2(static_cast<double>(lanes.v[u]));
    BOOST_TEST(std::abs(e[u] - ref) <= 3e-7 * ref);
    BOOST_TEST(four[1][u] == e[u]);  // four at once: the same bits
  }
  for (float x : {-126.5f, -126.6f, -127.0f, -150.0f, -1e4f, -std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::infinity()})
    BOOST_TEST(exp2_nonpositive(V::broadcast(x))[0] == 0.0f);
  BOOST_TEST(exp2_nonpositive(V::broadcast(-126.0f))[0] == std::numeric_limits<float>::min());
  const float below = exp2_nonpositive(V::broadcast(-126.25f))[0];  // a subnormal result
  BOOST_TEST(std::abs(below - std::exp2(-126.25)) <= std::exp2(-149.0));
  BOOST_TEST(exp2_nonpositive(V::broadcast(0.0f))[0] == 1.0f);
  BOOST_TEST(exp2_nonpositive(V::broadcast(-0.0f))[0] == 1.0f);
  BOOST_TEST(exp2_nonpositive(V::broadcast(-1.0f))[0] == 0.5f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(std::isnan(exp2_nonpositive(V::broadcast(nan))[0]));
  BOOST_TEST(std::isnan(exp2_nonpositive(V::broadcast(-nan))[0]));
}

// The same in double (exp2_double_coefficients, every target): within 1.5 ulp of 2^x (the
// polynomial holds 0.9 with FMA, 1.2 without; degree 10 would be 4.4) against std::exp2 in long
// double (x86's 64-bit mantissa), from the lazy rescaling's slack down to the smallest normal
// result 2^-1022, next to each integer and half-integer (where the reduction's r nears ±1/2);
// exactly 1 at 0 and where 2^x rounds to 1, exactly 0 below -1022.5 and at -inf, NaN for NaN;
// four registers at once the same bits as one.
BOOST_AUTO_TEST_CASE(base_2_exponential_of_nonpositive_arguments_in_double) {
  using V = argus::kernel::simd<double>;
  using argus::kernel::detail::exp2_nonpositive;
  double worst = 0;  // in ulps of the reference
  const auto check = [&](double x) {
    const long double ref = std::exp2(static_cast<long double>(x));
    const long double ulp = std::ldexp(1.0L, std::ilogb(ref) - 52);
    const long double got = exp2_nonpositive(V::broadcast(x))[0];
    worst = std::max(worst, static_cast<double>(std::fabs(got - ref) / ulp));
  };
  for (int step = -2000; step <= 255500; ++step)
    check(-0.0039991 * static_cast<double>(step));  // from +8.0 to -1021.8
  for (int k = 0; k >= -1021; --k)
    for (double edge : {0.0, 0.5, -0.5}) {
      double x = k + edge;
      for (int ulp = 0; ulp < 3; ++ulp) {
        check(x), check(std::nextafter(x, 1.0));
        x = std::nextafter(x, -std::numeric_limits<double>::infinity());
      }
    }
  BOOST_TEST(worst < 1.5);
  for (double x : {-0x1p-60, -1e-300, -std::numeric_limits<double>::denorm_min(), 0.0, -0.0})
    BOOST_TEST(exp2_nonpositive(V::broadcast(x))[0] == 1.0);  // 2^x rounds to 1
  BOOST_TEST(exp2_nonpositive(V::broadcast(-1.0))[0] == 0.5);
  BOOST_TEST(exp2_nonpositive(V::broadcast(-1022.0))[0] == std::numeric_limits<double>::min());
  const double below = exp2_nonpositive(V::broadcast(-1022.25))[0];  // a subnormal result
  BOOST_TEST(std::fabs(below - std::exp2(-1022.25L)) <= std::numeric_limits<double>::denorm_min());
  for (double x : {-1022.51, -1023.0, -1100.0, -1e300, -std::numeric_limits<double>::max(),
                   -std::numeric_limits<double>::infinity()})
    BOOST_TEST(exp2_nonpositive(V::broadcast(x))[0] == 0.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(std::isnan(exp2_nonpositive(V::broadcast(nan))[0]));
  BOOST_TEST(std::isnan(exp2_nonpositive(V::broadcast(-nan))[0]));
  V four[4];
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t u = 0; u < V::width; ++u)
      four[i].v[u] = -3.7 * static_cast<double>(i * V::width + u);  // to -115 on AVX-512
  const V lanes = four[2], e = exp2_nonpositive(lanes);
  exp2_nonpositive(four);
  for (std::size_t u = 0; u < V::width; ++u) BOOST_TEST(four[2][u] == e[u]);
}

BOOST_AUTO_TEST_CASE(tiles_and_scratch_do_not_grow_with_the_sequence) {
  attention_problem<float> p{};
  p.batch = 1, p.heads = 8, p.kv_heads = 8, p.d_k = 64, p.d_v = 64;
  p.seq_q = p.seq_kv = 128;
  const std::size_t small = argus::kernel::flash_attention_scratch_bytes(p);
  p.seq_q = p.seq_kv = 8192;
  const std::size_t large = argus::kernel::flash_attention_scratch_bytes(p);
  BOOST_TEST(small == large);
  BOOST_TEST(large < 256u * 1024u);
  const argus::kernel::flash_tiles t = argus::kernel::flash_attention_tiles(p);
  BOOST_TEST(t.q_tile % argus::kernel::simd<float>::width == 0u);
  BOOST_TEST(t.k_tile >= 1u);
}

// Key tiles of wide heads (flash_blocking::min_keys): prefill rows on lanes and decode-shaped
// calls (a few queries, at least 8 keys each) take at least min_keys keys a tile whatever the
// width; a few rows over fewer keys than that keep the K/V bytes rule; never more than 16 key
// blocks.
BOOST_AUTO_TEST_CASE(key_tiles_of_wide_heads_keep_their_floor_where_it_pays) {
  using blocking = argus::kernel::detail::flash_blocking<float>;
  attention_problem<float> p{};
  p.batch = 1, p.heads = 32, p.kv_heads = 8;
  for (std::size_t d : {64u, 128u, 256u, 512u}) {
    p.d_k = p.d_v = d;
    const std::size_t bytes_rule =
        std::max(blocking::key_block, blocking::kv_tile_bytes / (2 * d * sizeof(float)) /
                                          blocking::key_block * blocking::key_block);
    p.seq_q = p.seq_kv = 2048;  // prefill: 4 heads x 2048 queries a K/V head
    const std::size_t prefill = argus::kernel::flash_attention_tiles(p).k_tile;
    BOOST_TEST(prefill >= blocking::min_keys);
    BOOST_TEST(prefill >= std::min(bytes_rule, 16 * blocking::key_block));
    BOOST_TEST(prefill <= 16 * blocking::key_block);
    BOOST_TEST(prefill % blocking::key_block == 0u);
    for (std::size_t keys : {8u, 128u, 8192u}) {  // decode-shaped: keys split into chunks
      p.seq_q = 1, p.seq_kv = keys;
      BOOST_TEST(argus::kernel::flash_attention_tiles(p).k_tile == prefill);
    }
    p.seq_q = 4, p.seq_kv = 16;  // 16 rows (at most dot_rows on AVX-512), tile by tile
    BOOST_TEST(argus::kernel::flash_attention_tiles(p).k_tile ==
               std::min(bytes_rule, 16 * blocking::key_block));
  }
}

// The backward passes' transpose: register blocks and the ragged edges, every size around
// the vector width, strided source and destination; bitwise, no element outside written.
BOOST_AUTO_TEST_CASE_TEMPLATE(transpose_into_every_edge_size, T, scalar_types) {
  constexpr std::size_t w = argus::kernel::simd<T>::width;
  for (std::size_t rows = 0; rows <= 3 * w + 1; ++rows)
    for (std::size_t cols : {std::size_t{0}, std::size_t{1}, w - 1, w, w + 1, 2 * w + 3}) {
      const std::size_t ld_src = cols + 3, ld_dst = rows + 5;
      std::vector<T> src(rows * ld_src), dst(cols * ld_dst + 1, T(-7));
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = T(i) + T(0.25);
      argus::kernel::detail::transpose_into(rows, cols, src.data(), ld_src, dst.data(), ld_dst);
      std::size_t wrong = 0, touched = 0;
      for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = 0; r < ld_dst; ++r) {
          const T got = dst[c * ld_dst + r];
          if (r < rows)
            wrong += got != src[r * ld_src + c];
          else
            touched += got != T(-7);
        }
      BOOST_TEST(wrong == 0u, "rows " << rows << " cols " << cols);
      BOOST_TEST(touched == 0u, "rows " << rows << " cols " << cols);
      BOOST_TEST(dst.back() == T(-7));
    }
}

// A pair mask shared by every batch item and head is summarised once per call
// (detail::pair_mask_summary) and its tiles' covers read from the summary: it must decide as
// counting pair by pair does. The same problem with the mask shared (strides 0) and copied
// for every batch item and head (counted pair by pair) gives the same bits, forward (tiles
// of queries, and the decode split of the keys) with its log-sum-exp, and backward: packed
// documents (whole tiles ignored and kept beside partly ignored ones), a band, a random
// pattern and every pair ignored, on 1 and 2 threads.
BOOST_AUTO_TEST_CASE(a_shared_pair_mask_summarised_decides_as_counted) {
  using T = float;
  constexpr std::size_t B = 2, H = 4, G = 2, D = 32;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  struct extents {
    std::size_t sq, skv;
  };
  for (const extents e : {extents{300, 600}, extents{130, 130}, extents{3, 2000}})
    for (int pattern = 0; pattern < 4; ++pattern)
      for (std::size_t threads : {1, 2}) {
        const std::size_t sq = e.sq, skv = e.skv;
        std::vector<std::uint8_t> shared(sq * skv), copied(B * H * sq * skv);
        for (std::size_t i = 0; i < sq; ++i)
          for (std::size_t j = 0; j < skv; ++j) {
            // Documents of 200 positions (queries and keys numbered alike), a band of 40
            // keys either side, pairs at random, every pair.
            const bool ignored = pattern == 0 ? i * skv / sq / 200 != j / 200
                                 : pattern == 1
                                     ? (i * skv / sq > j ? i * skv / sq - j : j - i * skv / sq) > 40
                                 : pattern == 2 ? unit(rng) < -0.6
                                                : true;
            shared[i * skv + j] = ignored ? 1 : 0;
          }
        for (std::size_t x = 0; x < B * H; ++x)
          std::copy(shared.begin(), shared.end(), copied.begin() + std::ptrdiff_t(x * sq * skv));
        auto values = [&](std::size_t n) {
          std::vector<T> v(n);
          for (T& x : v) x = T(unit(rng));
          return v;
        };
        const std::vector<T> q = values(B * H * sq * D), k = values(B * G * skv * D),
                             v = values(B * G * skv * D), d_o = values(B * H * sq * D);
        struct run {
          std::vector<T> o, lse, dq, dk, dv;
        };
        auto solve = [&](bool summarised) {
          run r{std::vector<T>(q.size()), std::vector<T>(B * H * sq), std::vector<T>(q.size()),
                std::vector<T>(k.size()), std::vector<T>(v.size())};
          argus::kernel::attention_backward_problem<T> bp{};
          attention_problem<T>& p = bp.f;
          p.batch = B, p.heads = H, p.kv_heads = G, p.seq_q = sq, p.seq_kv = skv;
          p.d_k = p.d_v = D, p.scale = T(0.5);
          p.q = q.data(), p.q_batch = H * sq * D, p.q_head = sq * D, p.q_row = D;
          p.k = k.data(), p.k_batch = G * skv * D, p.k_head = skv * D, p.k_row = D;
          p.v = v.data(), p.v_batch = G * skv * D, p.v_head = skv * D, p.v_row = D;
          p.o = r.o.data(), p.o_batch = H * sq * D, p.o_head = sq * D, p.o_row = D;
          p.lse = r.lse.data(), p.lse_batch = H * sq, p.lse_head = sq;
          p.ignore = summarised ? shared.data() : copied.data(), p.ignore_row = skv;
          p.ignore_head = summarised ? 0 : sq * skv;
          p.ignore_batch = summarised ? 0 : H * sq * skv;
          argus::set_num_threads(threads);
          argus::kernel::flash_attention(p);
          bp.lse = r.lse.data(), bp.d_o = d_o.data();
          bp.d_q = r.dq.data(), bp.d_k = r.dk.data(), bp.d_v = r.dv.data();
          argus::kernel::flash_attention_backward(bp);
          argus::set_num_threads(0);
          return r;
        };
        const run a = solve(true), b = solve(false);
        BOOST_TEST_CONTEXT("seq_q " << sq << ", seq_kv " << skv << ", pattern " << pattern << ", "
                                    << threads << " threads") {
          BOOST_TEST((a.o == b.o));
          BOOST_TEST((a.lse == b.lse));
          BOOST_TEST((a.dq == b.dq));
          BOOST_TEST((a.dk == b.dk));
          BOOST_TEST((a.dv == b.dv));
        }
      }
}
