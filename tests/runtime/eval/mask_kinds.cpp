// Mask kinds of one's own: a class that says what it does to a pair (the concept Mask) is a
// mask for every evaluator, with no change to argus. Two kinds defined here, as a user would:
// same_document (packed sequences: a query attends only the keys of its own document; a
// boolean kind) and alibi (ALiBi's per-head linear bias; an additive kind that reads the
// head). Each is checked against what it means written with the built-in kinds (the dense
// ignore_where mask of its pairs; per head, add_to_scores of its biases), alone and in chains
// with built-in masks, fused (whose loop nest calls such a kind on each tile of pairs; a chain
// of two kinds of one's own runs in unfused steps), unfused, in the reference evaluator and in
// a module's forward, and in the loop nest's decode split (few queries, many keys); explain
// names them and says where they run; their run-time checks throw where mask() is called.
// Also: masks over scores given as a tensor.
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace user {

/// Packed sequences: several documents one after another in one sequence. Query i attends key
/// j only when both are of the same document; document[p] is the document of position p
/// (self-attention: queries and keys share the positions).
struct same_document {
  using mask_effect = argus::ignores_pairs;
  std::span<const int> document;

  bool ignores(std::size_t /*b*/, std::size_t /*h*/, std::size_t i, std::size_t j) const {
    return document[i] != document[j];
  }
  std::string name() const { return "same_document"; }
  void check_extents(std::size_t, std::size_t, std::size_t seq_q, std::size_t seq_kv) const {
    if (document.size() != seq_q || document.size() != seq_kv)
      throw argus::shape_error("same_document: " + std::to_string(document.size()) +
                               " positions for scores of " + std::to_string(seq_q) +
                               " queries and " + std::to_string(seq_kv) + " keys");
  }
};

/// ALiBi (Press et al., 2022): head h of `heads` adds -m_h · |i - j| to the logit of query i
/// and key j, with slopes m_h = 2^(-8 (h + 1) / heads).
struct alibi {
  using mask_effect = argus::adds_to_pairs<float>;
  std::size_t heads;

  float added(std::size_t /*b*/, std::size_t h, std::size_t i, std::size_t j) const {
    const float slope = std::exp2(-8.0f * static_cast<float>(h + 1) / static_cast<float>(heads));
    return -slope * static_cast<float>(i > j ? i - j : j - i);
  }
  std::string name() const { return "alibi"; }
  void check_extents(std::size_t, std::size_t h, std::size_t, std::size_t) const {
    if (h != heads)
      throw argus::shape_error("alibi: slopes for " + std::to_string(heads) +
                               " heads on scores of " + std::to_string(h));
  }
};

}  // namespace user

using namespace argus;

namespace {

using test::max_rel_diff;
using test::randomize;

using q_shape = shape<batch<>, head<4>, seq<>, head_dim<32>>;
using kv_shape = shape<batch<>, head<2>, seq<>, head_dim<32>>;
using pairs_t = tensor<bool, shape<seq<>, seq<>>>;

/// Positions of documents of the given lengths, one after another.
std::vector<int> documents(std::initializer_list<std::size_t> lengths) {
  std::vector<int> d;
  int id = 0;
  for (const std::size_t n : lengths) d.insert(d.end(), n, id++);
  return d;
}

/// The dense (seq, seq) mask of same_document: true where the documents differ.
pairs_t dense(const std::vector<int>& d) {
  pairs_t m(d.size(), d.size());  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = 0; j < d.size(); ++j) m(i, j) = d[i] != d[j];
  return m;
}

}  // namespace

// What a class needs to be a mask, and what does not make one.
struct not_a_kind {  // says nothing of what it does to a pair
  bool ignores(std::size_t, std::size_t, std::size_t, std::size_t) const { return false; }
  std::string name() const { return "not_a_kind"; }
};
struct adds_the_wrong_type {  // adds double, not the float its mask_effect says
  using mask_effect = adds_to_pairs<float>;
  double added(std::size_t, std::size_t, std::size_t, std::size_t) const { return 0; }
  std::string name() const { return "adds_the_wrong_type"; }
};
static_assert(Mask<user::same_document> && Mask<user::alibi>);
static_assert(!Mask<not_a_kind> && !Mask<adds_the_wrong_type>);
static_assert(mask_accepts<decltype(scores(std::declval<const tensor<float, q_shape>&>(),
                                           std::declval<const tensor<float, kv_shape>&>())),
                           user::same_document, causal_mask, user::alibi>);

BOOST_AUTO_TEST_CASE(a_boolean_kind_of_ones_own_masks_its_pairs) {
  for (const auto& d :
       {documents({1}), documents({5, 1, 9}), documents({70, 3, 64, 100}), documents({200})}) {
    const std::size_t n = d.size();
    tensor<float, q_shape> q(2, n);                     // (B,H,SEQ,D_K)
    tensor<float, kv_shape> k(2, n);                    // (B,G,SEQ,D_K)
    tensor<float, kv_shape> v(2, n);                    // (B,G,SEQ,D_V)
    tensor<bool, shape<batch<>, seq<>>> padding(2, n);  // (B,SEQ)
    randomize(q), randomize(k), randomize(v);
    for (std::size_t j = 0; j < n; ++j) padding(0, j) = j % 7 == 3, padding(1, j) = j + 2 >= n;
    const pairs_t pairs = dense(d);
    const auto s = scores(q, k);
    const user::same_document docs{d};
    const std::string where = "seq " + std::to_string(n);
    auto agree = [&](const auto& e, const auto& want, const std::string& what) {
      for (std::size_t threads : {1u, 2u}) {
        set_num_threads(threads);
        BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5, "fused, " << what);
      }
      set_num_threads(0);
      BOOST_TEST(max_rel_diff(evaluate(e, unfused), want) <= 1e-5, "unfused, " << what);
      BOOST_TEST(max_rel_diff(evaluate_reference(e), want) <= 1e-12, "reference, " << what);
    };
    agree(attend(softmax(mask(s, docs)), v),
          evaluate_reference(attend(softmax(mask(s, ignore_where(pairs))), v)), where);
    // In a chain: what any mask of it ignores is ignored.
    agree(attend(softmax(mask(s, causal, docs, ignore_keys(padding))), v),
          evaluate_reference(
              attend(softmax(mask(s, causal, ignore_where(pairs), ignore_keys(padding))), v)),
          where + ", with causal and ignore_keys");
  }
}

BOOST_AUTO_TEST_CASE(an_additive_kind_of_ones_own_reads_the_head) {
  const std::size_t heads = 4, group = 2, n = 70;
  tensor<float, q_shape> q(2, n);   // (B,H,SEQ,D_K)
  tensor<float, kv_shape> k(2, n);  // (B,G,SEQ,D_K)
  tensor<float, kv_shape> v(2, n);  // (B,G,SEQ,D_V)
  randomize(q), randomize(k), randomize(v);
  const user::alibi bias{heads};
  for (const bool with_causal : {false, true}) {
    // causal_from(n): every key.
    const auto e =
        attend(softmax(mask(scores(q, k), with_causal ? causal : causal_from(n), bias)), v);
    const auto got_fused = evaluate(e, fused);
    const auto got_unfused = evaluate(e, unfused);
    const auto got_reference = evaluate_reference(e);
    // Head by head, the same with add_to_scores of that head's biases.
    using one_q = shape<batch<>, head<1>, seq<>, head_dim<32>>;
    for (std::size_t h = 0; h < heads; ++h) {
      tensor<float, one_q> qh(2, n), kh(2, n), vh(2, n);  // (B,1,SEQ,D)
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t c = 0; c < 32; ++c)
            qh(b, 0, i, c) = q(b, h, i, c), kh(b, 0, i, c) = k(b, h / group, i, c),
                        vh(b, 0, i, c) = v(b, h / group, i, c);
      tensor<float, shape<seq<>, seq<>>> a(n, n);  // (SEQ_Q,SEQ_KV)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) a(i, j) = bias.added(0, h, i, j);
      const auto want = evaluate_reference(attend(
          softmax(mask(scores(qh, kh), with_causal ? causal : causal_from(n), add_to_scores(a))),
          vh));
      double fused_diff = 0, unfused_diff = 0, reference_diff = 0;
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t c = 0; c < 32; ++c) {
            const double w = want(b, 0, i, c), scale = 1 + std::abs(w);
            fused_diff = std::max(fused_diff, std::abs(got_fused(b, h, i, c) - w) / scale);
            unfused_diff = std::max(unfused_diff, std::abs(got_unfused(b, h, i, c) - w) / scale);
            reference_diff =
                std::max(reference_diff, std::abs(got_reference(b, h, i, c) - w) / scale);
          }
      BOOST_TEST(fused_diff <= 1e-5, "fused, head " << h << ", causal " << with_causal);
      BOOST_TEST(unfused_diff <= 1e-5, "unfused, head " << h << ", causal " << with_causal);
      BOOST_TEST(reference_diff <= 1e-12, "reference, head " << h << ", causal " << with_causal);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_module_forward_takes_a_kind_of_ones_own) {
  using mha_t = multi_head_attention<64, 4>;
  mha_t m;
  randomize(m.w_q, 0.2), randomize(m.w_k, 0.2), randomize(m.w_v, 0.2), randomize(m.w_o, 0.2);
  randomize(m.b_q, 0.1), randomize(m.b_k, 0.1), randomize(m.b_v, 0.1), randomize(m.b_o, 0.1);
  const std::vector<int> d = documents({30, 2, 41});
  tensor<float, shape<batch<>, seq<>, model<64>>> x(3, d.size());  // (B,SEQ,D_MODEL)
  randomize(x);
  const pairs_t pairs = dense(d);
  const auto want = evaluate_reference(m.forward(x, causal, ignore_where(pairs)));
  const auto e = m.forward(x, causal, user::same_document{d});
  BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5);
  BOOST_TEST(max_rel_diff(evaluate(e, unfused), want) <= 1e-5);
  BOOST_TEST(max_rel_diff(evaluate_reference(e), want) <= 1e-12);
}

// The fused plan of a core with one kind of one's own is the loop nest, which names it among
// its masks; with two kinds of one's own (one slot of the kernels' problem holds one) it is
// the unfused steps of the core, each named, computing the same; with the built-in kinds alone
// the core is one loop nest.
BOOST_AUTO_TEST_CASE(explain_names_the_kind_and_where_it_runs) {
  const std::vector<int> d = documents({10, 20});
  tensor<float, q_shape> q(1, d.size());   // (B,H,SEQ,D_K)
  tensor<float, kv_shape> k(1, d.size());  // (B,G,SEQ,D_K)
  tensor<float, kv_shape> v(1, d.size());  // (B,G,SEQ,D_V)
  randomize(q), randomize(k), randomize(v);
  const std::string own =
      explain(attend(softmax(mask(scores(q, k), causal, user::same_document{d})), v), fused)
          .to_string();
  BOOST_TEST(own.find("one loop nest") != std::string::npos, own);
  BOOST_TEST(own.find("masks causal + same_document") != std::string::npos, own);
  BOOST_TEST(own.find("(in place)") == std::string::npos, own);
  const auto two =
      attend(softmax(mask(scores(q, k), causal, user::same_document{d}, user::alibi{4})), v);
  const std::string two_own = explain(two, fused).to_string();
  BOOST_TEST(two_own.find("mask same_document (in place)") != std::string::npos, two_own);
  BOOST_TEST(two_own.find("mask alibi (in place)") != std::string::npos, two_own);
  BOOST_TEST(two_own.find("mask causal (in place)") != std::string::npos, two_own);
  BOOST_TEST(two_own.find("one loop nest") == std::string::npos, two_own);
  BOOST_TEST(max_rel_diff(evaluate(two, fused), evaluate_reference(two)) <= 1e-5);
  const std::string alibi =
      explain(attend(softmax(mask(scores(q, k), user::alibi{4})), v), unfused).to_string();
  BOOST_TEST(alibi.find("mask alibi (in place)") != std::string::npos, alibi);
  const std::string built_in =
      explain(attend(softmax(mask(scores(q, k), causal)), v), fused).to_string();
  BOOST_TEST(built_in.find("one loop nest") != std::string::npos, built_in);
  BOOST_TEST(built_in.find("masks causal") != std::string::npos, built_in);
}

// Few queries against many keys (decoding with a cache): the loop nest splits the keys into
// chunks over the threads and merges them; a kind of one's own is called on each chunk's tiles,
// with the positions of the whole sequence. Causal aligned bottom-right (the queries are the
// last positions) and top-left, ALiBi and a boolean kind of keys of one's own.
struct every_third_key {  // ignores key j of every query where j % 3 == 1, but the last key
  using mask_effect = argus::ignores_pairs;
  std::size_t keys;
  bool ignores(std::size_t, std::size_t, std::size_t, std::size_t j) const {
    return j % 3 == 1 && j + 1 != keys;
  }
  std::string name() const { return "every_third_key"; }
};

BOOST_AUTO_TEST_CASE(a_kind_of_ones_own_in_the_decode_split) {
  for (const std::size_t nq : {1u, 3u, 17u}) {
    const std::size_t nkv = 700;
    tensor<float, q_shape> q(1, nq);    // (B,H,SEQ_Q,D_K): one item, so that two threads
    tensor<float, kv_shape> k(1, nkv);  // (B,G,SEQ_KV,D_K)  split the keys
    tensor<float, kv_shape> v(1, nkv);  // (B,G,SEQ_KV,D_V)
    randomize(q), randomize(k), randomize(v);
    const auto s = scores(q, k);
    const std::string where = "seq_q " + std::to_string(nq);
    auto agree = [&](const auto& e, const std::string& what) {
      const auto want = evaluate_reference(e);
      for (std::size_t threads : {1u, 2u}) {
        set_num_threads(threads);
        BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5, "fused, " << what);
      }
      set_num_threads(0);
      BOOST_TEST(max_rel_diff(evaluate(e, unfused), want) <= 1e-5, "unfused, " << what);
    };
    agree(
        attend(softmax(mask(s, causal_from(static_cast<std::ptrdiff_t>(nkv - nq)), user::alibi{4})),
               v),
        where + ", causal bottom-right, alibi");
    agree(attend(softmax(mask(s, causal, user::alibi{4})), v), where + ", causal, alibi");
    agree(attend(softmax(mask(s, every_third_key{nkv})), v), where + ", every_third_key");
  }
}

// same_document saying which blocks it ignores whole (ignores_block: the documents are in
// order, so queries [i0, i1) and keys [j0, j1) meet no common document when one range's last
// document comes before the other's first), and counting its calls of ignores.
struct counted_documents {  // same_document, counting its calls
  using mask_effect = argus::ignores_pairs;
  std::span<const int> document;
  std::atomic<std::size_t>* pair_calls;
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    pair_calls->fetch_add(1, std::memory_order_relaxed);
    return document[i] != document[j];
  }
  std::string name() const { return "counted_documents"; }
};
struct blocked_documents : counted_documents {
  bool ignores_block(std::size_t, std::size_t, std::size_t i0, std::size_t i1, std::size_t j0,
                     std::size_t j1) const {
    return document[i1 - 1] < document[j0] || document[j1 - 1] < document[i0];
  }
  std::string name() const { return "blocked_documents"; }
};

// The loop nest skips the tiles a kind ignores whole, with the same results to the bit (a
// skipped tile adds nothing to a row's sum or maximum), and asks the kind about fewer pairs.
BOOST_AUTO_TEST_CASE(a_kind_that_ignores_blocks_skips_their_tiles) {
  for (const auto& d : {documents({40, 300, 7, 250}), documents({600}), documents({1, 1, 1}),
                        documents({64, 64, 64, 64, 64, 64, 64, 64, 64, 64})}) {
    const std::size_t n = d.size();
    tensor<float, q_shape> q(2, n);                     // (B,H,SEQ,D_K)
    tensor<float, kv_shape> k(2, n);                    // (B,G,SEQ,D_K)
    tensor<float, kv_shape> v(2, n);                    // (B,G,SEQ,D_V)
    tensor<bool, shape<batch<>, seq<>>> padding(2, n);  // (B,SEQ)
    randomize(q), randomize(k), randomize(v);
    for (std::size_t j = 0; j < n; ++j) padding(0, j) = j % 5 == 2, padding(1, j) = j + 3 >= n;
    const auto s = scores(q, k);
    std::atomic<std::size_t> every = 0, blocked = 0;
    const user::same_document plain{d};
    const blocked_documents by_blocks{{d, &blocked}};
    const std::string where = "seq " + std::to_string(n);
    for (std::size_t threads : {1u, 2u}) {
      set_num_threads(threads);
      const auto want = evaluate(attend(softmax(mask(s, plain)), v), fused);
      const auto got = evaluate(attend(softmax(mask(s, by_blocks)), v), fused);
      BOOST_TEST(max_rel_diff(got, want) == 0.0, where);
      BOOST_TEST(max_rel_diff(got, evaluate_reference(attend(softmax(mask(s, plain)), v))) <= 1e-5,
                 where);
      const auto chain = attend(softmax(mask(s, causal, by_blocks, ignore_keys(padding))), v);
      BOOST_TEST(
          max_rel_diff(evaluate(chain, fused),
                       evaluate(attend(softmax(mask(s, causal, plain, ignore_keys(padding))), v),
                                fused)) == 0.0,
          where << ", with causal and ignore_keys");
    }
    set_num_threads(0);
    blocked = 0;
    (void)evaluate(attend(softmax(mask(s, by_blocks)), v), fused);
    (void)evaluate(attend(softmax(mask(s, counted_documents{d, &every})), v), fused);
    BOOST_TEST(every.load() >= 2 * 4 * n * n, where);  // every pair of every head, at least
    if (n == 600) BOOST_TEST(blocked.load() == every.load(), where);     // one document: no skip
    if (n == 640) BOOST_TEST(blocked.load() < every.load() / 2, where);  // most tiles skipped
  }
}

// ignore_keys and ignore_where as kinds of one's own (reading the same tensors), which skip
// no tile: the loop nest computes every tile of theirs and sets the pairs they ignore to -inf.
using padding_t = tensor<bool, shape<batch<>, seq<>>>;
struct padded_keys {
  using mask_effect = argus::ignores_pairs;
  const padding_t* padding;
  bool ignores(std::size_t b, std::size_t, std::size_t, std::size_t j) const {
    return (*padding)(b, j);
  }
  std::string name() const { return "padded_keys"; }
};
struct pairs_and_padding {
  using mask_effect = argus::ignores_pairs;
  const pairs_t* pairs;
  const padding_t* padding;
  bool ignores(std::size_t b, std::size_t, std::size_t i, std::size_t j) const {
    return (*pairs)(i, j) || (*padding)(b, j);
  }
  std::string name() const { return "pairs_and_padding"; }
};

// The built-in boolean masks skip the tiles they ignore whole as well: ignore_keys a tile of
// padded keys only (a shorter sequence's tail), ignore_where a tile of a set of rows whose
// every pair it ignores (other documents). The same results to the bit as the same pairs
// ignored by a kind of one's own that skips nothing, in the loop nest and in its decode split
// (few queries, keys in chunks over threads: a chunk of padding only).
BOOST_AUTO_TEST_CASE(built_in_masks_skip_the_tiles_they_ignore_whole) {
  for (const auto& d : {documents({40, 300, 7, 250}), documents({600}),
                        documents({64, 64, 64, 64, 64, 64, 64, 64, 64, 64})}) {
    const std::size_t n = d.size();
    tensor<float, q_shape> q(2, n);   // (B,H,SEQ,D_K)
    tensor<float, kv_shape> k(2, n);  // (B,G,SEQ,D_K)
    tensor<float, kv_shape> v(2, n);  // (B,G,SEQ,D_V)
    padding_t padding(2, n);          // (B,SEQ)
    randomize(q), randomize(k), randomize(v);
    // Item 0: the last two thirds padding; item 1: scattered keys and the last three.
    for (std::size_t j = 0; j < n; ++j)
      padding(0, j) = j >= n / 3, padding(1, j) = j % 7 == 3 || j + 3 >= n;
    const pairs_t pairs = dense(d);
    const auto s = scores(q, k);
    const std::string where = "seq " + std::to_string(n);
    for (std::size_t threads : {1u, 2u}) {
      set_num_threads(threads);
      const auto by_pairs = evaluate(attend(softmax(mask(s, ignore_where(pairs))), v), fused);
      BOOST_TEST(
          max_rel_diff(by_pairs,
                       evaluate(attend(softmax(mask(s, user::same_document{d})), v), fused)) == 0.0,
          where);
      BOOST_TEST(max_rel_diff(by_pairs, evaluate_reference(attend(
                                            softmax(mask(s, ignore_where(pairs))), v))) <= 1e-5,
                 where);
      const auto by_keys = evaluate(attend(softmax(mask(s, ignore_keys(padding))), v), fused);
      BOOST_TEST(max_rel_diff(by_keys, evaluate(attend(softmax(mask(s, padded_keys{&padding})), v),
                                                fused)) == 0.0,
                 where);
      BOOST_TEST(max_rel_diff(by_keys, evaluate_reference(attend(
                                           softmax(mask(s, ignore_keys(padding))), v))) <= 1e-5,
                 where);
      const auto chain = evaluate(
          attend(softmax(mask(s, causal, ignore_where(pairs), ignore_keys(padding))), v), fused);
      BOOST_TEST(
          max_rel_diff(
              chain,
              evaluate(attend(softmax(mask(s, causal, pairs_and_padding{&pairs, &padding})), v),
                       fused)) == 0.0,
          where << ", chained with causal");
    }
  }
  // The decode split: 3 queries against 700 keys, item 0's keys padding from 200 on.
  tensor<float, q_shape> q(2, 3);     // (B,H,SEQ_Q,D_K)
  tensor<float, kv_shape> k(2, 700);  // (B,G,SEQ_KV,D_K)
  tensor<float, kv_shape> v(2, 700);  // (B,G,SEQ_KV,D_V)
  padding_t padding(2, 700);          // (B,SEQ_KV)
  pairs_t pairs(3, 700);              // (SEQ_Q,SEQ_KV)
  randomize(q), randomize(k), randomize(v);
  for (std::size_t j = 0; j < 700; ++j) {
    padding(0, j) = j >= 200, padding(1, j) = j % 11 == 0;
    for (std::size_t i = 0; i < 3; ++i) pairs(i, j) = j < 300 || j % 3 == i;
  }
  const auto s = scores(q, k);
  for (std::size_t threads : {1u, 2u}) {
    set_num_threads(threads);
    const auto got = evaluate(attend(softmax(mask(s, ignore_keys(padding))), v), fused);
    BOOST_TEST(max_rel_diff(got, evaluate(attend(softmax(mask(s, padded_keys{&padding})), v),
                                          fused)) == 0.0);
    const auto both =
        evaluate(attend(softmax(mask(s, ignore_where(pairs), ignore_keys(padding))), v), fused);
    BOOST_TEST(max_rel_diff(
                   both, evaluate(attend(softmax(mask(s, pairs_and_padding{&pairs, &padding})), v),
                                  fused)) == 0.0);
    BOOST_TEST(max_rel_diff(both, evaluate_reference(attend(
                                      softmax(mask(s, ignore_where(pairs), ignore_keys(padding))),
                                      v))) <= 1e-5);
  }
  set_num_threads(0);
}

BOOST_AUTO_TEST_CASE(a_kinds_run_time_checks_throw_where_mask_is_called) {
  const std::vector<int> d = documents({10, 20});
  tensor<float, q_shape> q(1, d.size() + 1);   // (B,H,SEQ,D_K): one position more
  tensor<float, kv_shape> k(1, d.size() + 1);  // (B,G,SEQ,D_K)
  const auto s = scores(q, k);
  BOOST_CHECK_THROW((void)mask(s, user::same_document{d}), shape_error);
  BOOST_CHECK_THROW((void)mask(s, causal, user::alibi{8}), shape_error);
  BOOST_CHECK_NO_THROW((void)mask(s, user::alibi{4}));
}

// Masks over scores given as a tensor (computed elsewhere) rather than scores(q, k): no fused
// pattern matches them, and they run in unfused steps under either policy, every kind alike.
BOOST_AUTO_TEST_CASE(masks_over_scores_given_as_a_tensor) {
  const std::vector<int> d = documents({3, 9, 5});
  const std::size_t n = d.size();
  tensor<float, shape<batch<>, head<4>, seq<>, seq<>>> s(2, n, n);       // (B,H,SEQ_Q,SEQ_KV)
  tensor<float, shape<batch<>, head<4>, seq<>, head_dim<32>>> v4(2, n);  // (B,H,SEQ,D_V)
  randomize(s), randomize(v4);
  const pairs_t pairs = dense(d);
  const auto e = attend(softmax(mask(s, causal, user::same_document{d}, user::alibi{4})), v4);
  const auto want =
      evaluate_reference(attend(softmax(mask(s, causal, ignore_where(pairs), user::alibi{4})), v4));
  BOOST_TEST(max_rel_diff(evaluate(e, fused), want) <= 1e-5);
  BOOST_TEST(max_rel_diff(evaluate(e, unfused), want) <= 1e-5);
  BOOST_TEST(max_rel_diff(evaluate_reference(e), want) <= 1e-12);
  const auto built_in = attend(softmax(mask(s, causal, ignore_where(pairs))), v4);
  BOOST_TEST(max_rel_diff(evaluate(built_in, fused), evaluate_reference(built_in)) <= 1e-5);
}
