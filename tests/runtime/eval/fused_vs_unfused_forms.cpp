// The law of every fused pattern (tests/support/fused_law.hpp) on the configurations and
// forms fused_vs_unfused.cpp leaves out (that file holds what the TSan stage runs too):
// modules of other shapes, decode shapes, large logits, results written into an operand or a
// caller's tensor, strided weights; and patterns that do not match fall back to unfused steps,
// never to a wrong answer.
#include "../../support/fused_law.hpp"
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <utility>

using namespace argus;

namespace {

using test::cfg;
using test::law;
using test::max_rel_diff;
using test::randomize;

}  // namespace

using configs = std::tuple<cfg<float, 512, 8, 8, 64, 64>, cfg<float, 64, 4, 4, 16, 16>,
                           cfg<double, 24, 3, 3, 4, 4>, cfg<float, 256, 2, 2, 128, 128>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(module_forward_fused_equals_unfused, C, configs) {
  test::module_forward_law<C>();
}

BOOST_AUTO_TEST_CASE(decode_shapes) {
  multi_head_attention<128, 4, mha_options{.kv_heads = 2}> mha;
  randomize(mha.w_q, 0.1), randomize(mha.w_k, 0.1), randomize(mha.w_v, 0.1),
      randomize(mha.w_o, 0.1);
  for (std::size_t sq : {1u, 4u, 16u})
    for (std::size_t skv : {1u, 100u, 3000u}) {
      tensor<float, shape<batch<>, seq<>, model<128>>> q(2, sq), kv(2, skv);  // (B,SEQ,D_MODEL)
      randomize(q), randomize(kv);
      BOOST_TEST_CONTEXT("seq_q " << sq << ", seq_kv " << skv) { law(mha.forward(q, kv, kv)); }
    }
}

BOOST_AUTO_TEST_CASE(unrecognised_sub_trees_fall_back_to_unfused_steps) {
  // Two causal masks: not a chain the fused loop nest takes; the result must still be right.
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<8>>> q(10), k(10), v(10);  // (1,2,SEQ,8)
  randomize(q), randomize(k), randomize(v);
  law(attend(softmax(mask(scores(q, k), causal, causal)), v));
  // Softmax alone, scores alone: unfused steps under the fused policy.
  law(softmax(scores(q, k)));
  law(scores(q, k));
  // Heads split at the root (unfused: the copy written straight into out; one position: no
  // copy), and a merge of heads at the root (unfused: the copy written straight into out).
  tensor<float, shape<batch<>, seq<>, model<16>>> x(2, 7), x1(2, 1);
  randomize(x), randomize(x1);
  law(split_heads<2>(x));
  law(split_heads<2>(x1));
  law(merge_heads(attend(softmax(scores(q, k)), v)));
  law(merge_heads(attend(softmax(mask(scores(q, k), causal, causal)), v)));
}

BOOST_AUTO_TEST_CASE(large_logits_stay_finite_fused) {
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<16>>> q(40), k(40), v(40);  // (1,2,SEQ,16)
  randomize(q, 30.0), randomize(k, 30.0), randomize(v);  // logits ~ ±1e4
  const auto f = evaluate(attend(softmax(scores(q, k)), v), fused);
  for (float x : f) BOOST_TEST(std::isfinite(x));
  law(attend(softmax(scores(q, k)), v));
}

// evaluate(e, p, out) lets the root's step write into out, unless out is memory the step
// reads: then the result must still be what a fresh tensor receives. The sizes make the
// kernels write some of out before they have read all of it (several query items per head;
// two k blocks in the product), so writing into an operand would show.
BOOST_AUTO_TEST_CASE(evaluating_into_an_operand_gives_the_fresh_result) {
  using heads = tensor<float, shape<batch<>, head<2>, seq<>, head_dim<8>>>;  // (B,2,SEQ,8)
  using rows = tensor<float, shape<batch<>, seq<>, model<300>>>;             // (B,SEQ,300)
  tensor<float, shape<seq<>, seq<>>> add(300, 300);                          // (SEQ,SEQ)
  tensor<float, shape<model<300>, model<300>>> w;                            // (300,300)
  randomize(add), randomize(w, 0.06);
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    for (int which = 0; which < 3; ++which) {
      BOOST_TEST_CONTEXT(threads << " threads, out is operand " << which) {
        heads q(2, 300), k(2, 300), v(2, 300);
        randomize(q), randomize(k), randomize(v);
        heads* const operand[] = {&q, &k, &v};
        const heads &cq = q, &ck = k, &cv = v;
        const auto core = attend(softmax(mask(scores(cq, ck), causal, add_to_scores(add))), cv);
        const auto fresh_fused = evaluate(core, fused), fresh_unfused = evaluate(core, unfused);
        heads& out = *operand[which];
        heads copy = out;
        evaluate(core, fused, out);
        BOOST_TEST(max_rel_diff(out, fresh_fused) == 0.0);
        out = copy;
        evaluate(core, unfused, out);
        BOOST_TEST(max_rel_diff(out, fresh_unfused) == 0.0);
        // No mask: the unfused weighted sum writes into out unless out is V.
        out = copy;
        const auto plain = attend(softmax(scores(cq, ck)), cv);
        const auto plain_fused = evaluate(plain, fused), plain_unfused = evaluate(plain, unfused);
        evaluate(plain, fused, out);
        BOOST_TEST(max_rel_diff(out, plain_fused) == 0.0);
        out = copy;
        evaluate(plain, unfused, out);
        BOOST_TEST(max_rel_diff(out, plain_unfused) == 0.0);
      }
    }
    // x is q, k and v of every head (strided views) and the output of the merged loop nest;
    // and both x and the output of its projection.
    rows x(2, 100);
    randomize(x);
    const rows& cx = x;
    const auto merged = merge_heads(
        attend(softmax(scores(split_heads<3>(cx), split_heads<3>(cx))), split_heads<3>(cx)));
    const auto fresh_merged = evaluate(merged, fused);
    const rows saved = x;
    evaluate(merged, fused, x);
    BOOST_TEST(max_rel_diff(x, fresh_merged) == 0.0);
    x = saved;
    const auto projected = project(cx, w);
    const auto fresh_projected = evaluate(projected, fused);
    evaluate(projected, fused, x);
    BOOST_TEST(max_rel_diff(x, fresh_projected) == 0.0);
    x = saved;
    evaluate(projected, unfused, x);
    BOOST_TEST(max_rel_diff(x, fresh_projected) == 0.0);
    // Narrow heads: the loop nest writes rows of x that later tiles read.
    tensor<float, shape<batch<>, seq<>, model<16>>> narrow(2, 70);  // (B,SEQ,16)
    randomize(narrow);
    const auto& cn = narrow;
    const auto merged_narrow = merge_heads(
        attend(softmax(scores(split_heads<2>(cn), split_heads<2>(cn))), split_heads<2>(cn)));
    const auto fresh_narrow = evaluate(merged_narrow, fused);
    evaluate(merged_narrow, fused, narrow);
    BOOST_TEST(max_rel_diff(narrow, fresh_narrow) == 0.0);
    // Out's own storage seen as the operand of a split or a merge of heads: the copy is made
    // through a fresh buffer (a strided copy in place would overwrite elements it has yet
    // to read), with both policies.
    using rows16 = shape<batch<>, seq<>, model<16>>;
    using heads16 = shape<batch<>, head<2>, seq<>, head_dim<8>>;
    // e reads out (whose contents are `saved`): into out, both policies give the fresh result.
    auto into_itself = [](const auto& e, auto& out, const auto& saved, const char* what) {
      const auto fresh = evaluate(e, unfused);
      out = saved;
      evaluate(e, fused, out);
      BOOST_TEST(max_rel_diff(out, fresh) == 0.0, what << ", fused");
      out = saved;
      evaluate(e, unfused, out);
      BOOST_TEST(max_rel_diff(out, fresh) == 0.0, what << ", unfused");
    };
    heads split_out(2, 30);
    randomize(split_out);
    const heads split_saved = split_out;
    const tensor_view<const float, rows16> as_rows(split_out.data(), rows16(2, 30));
    into_itself(split_heads<2>(as_rows), split_out, split_saved, "split");
    tensor<float, rows16> merge_out(2, 30);
    randomize(merge_out);
    const tensor<float, rows16> merge_saved = merge_out;
    const tensor_view<const float, heads16> as_heads(merge_out.data(), heads16(2, 30));
    into_itself(merge_heads(as_heads), merge_out, merge_saved, "merge");
  }
  set_num_threads(0);
}

// Weights and biases given as strided views (W's transpose read with swapped strides, every
// other element of a longer bias) are read through their strides, by both evaluators: their
// row-major copies are W and b themselves. (A rank-2 or rank-1 view was once copied as if it
// were contiguous: silent garbage.)
BOOST_AUTO_TEST_CASE(strided_weight_and_bias_views_are_read_through_their_strides) {
  using W = shape<model<64>, model<48>>;
  using B = shape<model<48>>;
  tensor<float, W> w;
  tensor<float, B> b;
  tensor<float, shape<model<48>, model<64>>> wt;  // Wᵀ, row-major
  tensor<float, shape<model<96>>> b2;             // b at the even positions
  randomize(w, 0.1), randomize(b, 0.1), randomize(b2);
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = 0; j < 48; ++j) wt(j, i) = w(i, j);
  for (std::size_t j = 0; j < 48; ++j) b2(2 * j) = b(j);
  const tensor_view<const float, W> w_view(wt.data(), layout<W>{W{}, {1, 64}});
  const tensor_view<const float, B> b_view(b2.data(), layout<B>{B{}, {2}});
  tensor<float, shape<batch<>, seq<>, model<64>>> x(2, 9);
  randomize(x);
  const auto& cx = x;
  const auto& cw = w;
  const auto& cb = b;
  for (const bool use_fused : {true, false}) {
    const auto want =
        use_fused ? evaluate(project(cx, cw, cb), fused) : evaluate(project(cx, cw, cb), unfused);
    const auto got = use_fused ? evaluate(project(cx, w_view, b_view), fused)
                               : evaluate(project(cx, w_view, b_view), unfused);
    BOOST_TEST(max_rel_diff(got, want) == 0.0, "fused " << use_fused);
  }
  // A key-padding mask read through a transposed view of a (SEQ, B) buffer.
  using P = shape<batch<>, seq<>>;
  tensor<std::uint8_t, P> pad(2, 9);
  tensor<std::uint8_t, shape<seq<>, batch<>>> pad_t(9, 2);
  for (std::size_t bi = 0; bi < 2; ++bi)
    for (std::size_t j = 0; j < 9; ++j) pad_t(j, bi) = pad(bi, j) = (j * 3 + bi) % 4 == 0;
  const tensor_view<const std::uint8_t, P> pad_view(pad_t.data(), layout<P>{P(2, 9), {1, 2}});
  using heads = tensor<float, shape<batch<>, head<2>, seq<>, head_dim<8>>>;
  heads q(2, 9), k(2, 9), v(2, 9);
  randomize(q), randomize(k), randomize(v);
  const heads &cq = q, &ck = k, &cv = v;
  const auto& cpad = pad;
  for (const bool use_fused : {true, false}) {
    const auto plain = attend(softmax(mask(scores(cq, ck), ignore_keys(cpad))), cv);
    const auto viewed = attend(softmax(mask(scores(cq, ck), ignore_keys(pad_view))), cv);
    const auto want = use_fused ? evaluate(plain, fused) : evaluate(plain, unfused);
    const auto got = use_fused ? evaluate(viewed, fused) : evaluate(viewed, unfused);
    BOOST_TEST(max_rel_diff(got, want) == 0.0, "mask view, fused " << use_fused);
  }
}

// The unfused weighted sum of a mask chain reads the masks while it writes (for the keys whose
// V rows are not finite): out sharing bytes with a mask must not change the result. Here the
// additive mask is a view of out's first elements, -inf where key 3 (V row 3 infinite) is to
// be ignored; were out written while the mask is read, key 3's infinity would reach the rows.
BOOST_AUTO_TEST_CASE(evaluating_into_a_masks_storage_gives_the_fresh_result) {
  using heads = tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<16>>>;  // (1,2,SEQ,16)
  using pairs = shape<seq<>, seq<>>;
  constexpr std::size_t n = 20;  // the mask's n·n = 400 elements within out's 2·n·16 = 640
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    BOOST_TEST_CONTEXT(threads << " threads") {
      heads q(n), k(n), v(n), out(n);
      randomize(q), randomize(k), randomize(v), randomize(out);
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t c = 0; c < 16; ++c) v(0, h, 3, c) = std::numeric_limits<float>::infinity();
      float* m = out.data();
      for (std::size_t i = 0; i < n; ++i) m[i * n + 3] = -std::numeric_limits<float>::infinity();
      const tensor_view<const float, pairs> add(m, pairs(n, n));
      const heads &cq = q, &ck = k, &cv = v;
      const auto core = attend(softmax(mask(scores(cq, ck), add_to_scores(add))), cv);
      const auto fresh = evaluate(core, unfused);
      for (float x : fresh) BOOST_TEST_REQUIRE(std::isfinite(x));
      const heads saved = out;
      evaluate(core, unfused, out);
      BOOST_TEST(max_rel_diff(out, fresh) == 0.0);
      // The same with the mask elsewhere: the weighted sum writes into out.
      out = saved;
      tensor<float, pairs> own(n, n);
      std::copy(m, m + n * n, own.data());
      const auto apart = attend(softmax(mask(scores(cq, ck), add_to_scores(own))), cv);
      evaluate(apart, unfused, out);
      BOOST_TEST(max_rel_diff(out, fresh) == 0.0);
    }
  }
  set_num_threads(0);
}

// A mask or the softmax at the root of evaluate(e, p, out) works in place on out, where the
// scores are written: the same bits as a fresh result, with both policies and on 1-3 threads;
// and where out's own storage is a mask of the chain or Q (so that writing the scores into
// out would overwrite what is still to be read), the scores go to a fresh buffer first.
BOOST_AUTO_TEST_CASE(masks_and_softmax_at_the_root_work_in_out) {
  using heads = tensor<float, shape<batch<>, head<2>, seq<>, head_dim<8>>>;  // (B,2,SEQ,8)
  using pairs = shape<seq<>, seq<>>;
  using keys = shape<batch<>, seq<>>;
  constexpr std::size_t n = 24;
  heads q(2, n), k(2, n);
  using logits = decltype(evaluate(scores(std::as_const(q), std::as_const(k)), unfused));
  randomize(q), randomize(k);
  tensor<float, pairs> add(n, n);
  randomize(add);
  tensor<std::uint8_t, keys> padding(2, n);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t j = 0; j < n; ++j) padding(b, j) = j % 5 == 4;
  const heads &cq = q, &ck = k;
  const auto& cadd = add;
  const auto& cpadding = padding;
  // e into out (first filled with `before`, which e may read), against e evaluated into a
  // fresh tensor: the same bits (masked logits are -inf, which max_rel_diff does not compare).
  auto same_bits = [](const logits& a, const logits& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  auto into_out = [&](const auto& e, logits& out, const logits& before, const char* what) {
    out = before;
    const auto fresh = evaluate(e, unfused);
    evaluate(e, unfused, out);
    BOOST_TEST(same_bits(out, fresh), what << ", unfused");
    out = before;
    evaluate(e, fused, out);
    BOOST_TEST(same_bits(out, fresh), what << ", fused");
  };
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    BOOST_TEST_CONTEXT(threads << " threads") {
      logits out = evaluate(scores(cq, ck), unfused);  // (B,2,SEQ,SEQ)
      randomize(out);
      const logits before = out;
      into_out(softmax(scores(cq, ck)), out, before, "softmax");
      into_out(mask(scores(cq, ck), causal), out, before, "causal mask");
      into_out(mask(scores(cq, ck), causal, ignore_keys(cpadding), add_to_scores(cadd)), out,
               before, "three masks");
      into_out(softmax(mask(scores(cq, ck), ignore_keys(cpadding), add_to_scores(cadd))), out,
               before, "softmax of two masks");
      // The additive mask is out's first (SEQ,SEQ) plane.
      const tensor_view<const float, pairs> add_in_out(out.data(), pairs(n, n));
      into_out(mask(scores(cq, ck), add_to_scores(add_in_out)), out, before, "mask in out");
      into_out(softmax(mask(scores(cq, ck), causal, add_to_scores(add_in_out))), out, before,
               "softmax, mask in out");
      // Q is out's first 2 · 2 · SEQ · 8 elements.
      const tensor_view<const float, typename heads::shape_type> q_in_out(
          out.data(), typename heads::shape_type(2, n));
      into_out(softmax(scores(q_in_out, ck)), out, before, "softmax, Q in out");
      into_out(mask(scores(q_in_out, ck), causal), out, before, "mask, Q in out");
    }
  }
  set_num_threads(0);
}

BOOST_AUTO_TEST_CASE(shares_bytes_is_exact_at_the_edges) {
  float a[16] = {};
  using S = shape<seq<>, model<4>>;
  const tensor_view<const float, S> rows_1_2(a + 4, S(2));                 // a[4, 12)
  BOOST_TEST(!detail::shares_bytes(a, 4 * sizeof(float), rows_1_2));       // a[0, 4)
  BOOST_TEST(detail::shares_bytes(a, 5 * sizeof(float), rows_1_2));        // a[0, 5)
  BOOST_TEST(detail::shares_bytes(a + 11, sizeof(float), rows_1_2));       // a[11]
  BOOST_TEST(!detail::shares_bytes(a + 12, 4 * sizeof(float), rows_1_2));  // a[12, 16)
  BOOST_TEST(!detail::shares_bytes(a, 0, rows_1_2));                       // nothing written
  // A strided view reads from its first to its last element, gaps included.
  const tensor_view<const float, S> every_other(a, layout<S>{S(2), {8, 1}});  // a[0,4), a[8,12)
  BOOST_TEST(detail::shares_bytes(a + 5, sizeof(float), every_other));
  BOOST_TEST(!detail::shares_bytes(a + 12, sizeof(float), every_other));
}

// How a projection's product is shared out (detail::split_product): every (row, unit) in
// exactly one task, the threads used as well as a row split alone uses them, and on short
// sequences whole groups of columns, so that each thread copies only its share of W.
BOOST_AUTO_TEST_CASE(projection_splits_cover_the_product_once) {
  std::size_t checked = 0;
  for (std::size_t rows : {1u, 7u, 16u, 17u, 100u, 128u, 1024u, 5000u})
    for (std::size_t units : {1u, 2u, 3u, 8u, 16u, 25u})
      for (std::size_t threads : {1u, 2u, 3u, 4u, 7u, 16u, 64u})
        for (const bool w_packed : {false, true})
          for (std::size_t align : {1u, 2u, 4u}) {
            const auto s = detail::split_product(rows, units, 32, threads, w_packed, align);
            BOOST_TEST_CONTEXT("rows " << rows << " units " << units << " threads " << threads
                                       << " packed " << w_packed << " align " << align) {
              BOOST_TEST(s.rows_per >= 1u);
              BOOST_TEST(s.units_per >= 1u);
              BOOST_TEST(s.row_blocks == (rows + s.rows_per - 1) / s.rows_per);
              BOOST_TEST(s.groups == (units + s.units_per - 1) / s.units_per);
              // Every task non-empty: the last row block and the last group hold something.
              BOOST_TEST((s.row_blocks - 1) * s.rows_per < rows);
              BOOST_TEST((s.groups - 1) * s.units_per < units);
              // No fewer tasks than a row split alone gives, up to the threads.
              const std::size_t row_only = (rows + detail::rows_per_task(rows, threads) - 1) /
                                           detail::rows_per_task(rows, threads);
              BOOST_TEST(std::min(s.tasks(), threads) >= std::min(row_only, threads));
              if (threads == 1) BOOST_TEST(s.tasks() == 1u);
            }
            ++checked;
          }
  BOOST_TEST(checked > 1000u);
  // Three sequences of 1024 rows on 2 threads: two row blocks each (6 tasks, 3 per thread),
  // not one (3 tasks, 2 on one thread).
  BOOST_TEST(detail::split_product(1024, 8, 64, 2, false, 1, 3).row_blocks == 2u);
  BOOST_TEST(detail::split_product(1024, 8, 64, 2, false, 1, 4).tasks() == 1u);
  BOOST_TEST(detail::split_product(0, 8, 64, 2, false).tasks() == 0u);  // nothing to share
  BOOST_TEST(detail::split_product(5, 0, 64, 2, false).tasks() == 0u);
  // Short sequence, 2 threads, W copied per call: the heads are split (each thread copies
  // half of W); long sequence: the rows are; W packed once: the rows.
  BOOST_TEST(detail::split_product(128, 8, 64, 2, false).groups == 2u);
  BOOST_TEST(detail::split_product(1024, 8, 64, 2, false).groups == 1u);
  BOOST_TEST(detail::split_product(1024, 8, 64, 2, false).row_blocks == 2u);
  BOOST_TEST(detail::split_product(128, 8, 64, 2, true).groups == 1u);
  BOOST_TEST(detail::split_product(128, 8, 64, 16, false).groups == 8u);
  // d_k 80 on 32-column panels (align 2): groups of an even number of heads.
  BOOST_TEST(detail::split_product(16, 8, 80, 2, true, 2).units_per % 2 == 0u);
}

// Whatever the threads and however the product is split (rows or heads), a projection, plain
// or into split heads (returned, or written straight into the caller's tensor), gives the same
// bits: every element is the same products in the same order (kernel::gemm_nn_split).
BOOST_AUTO_TEST_CASE(projections_are_the_same_bits_on_any_number_of_threads) {
  multi_head_attention<160, 2> mha;  // d_k 80: tiles straddle heads on AVX-512
  randomize(mha.w_q, 0.1), randomize(mha.b_q, 0.1);
  for (std::size_t n : {1u, 5u, 16u, 40u, 130u}) {
    tensor<float, shape<batch<>, seq<>, model<160>>> x(2, n);
    randomize(x);
    const tensor<float, shape<batch<>, seq<>, model<160>>>& cx = x;
    const auto plain = project(cx, mha.w_q, mha.b_q);
    const auto heads = split_heads<2>(project(cx, mha.w_q, mha.b_q));
    set_num_threads(1);
    const auto plain_one = evaluate(plain, unfused);
    const auto heads_one = evaluate(heads, fused);
    const auto served = prepack(mha);
    for (std::size_t threads : {2u, 3u, 5u, 8u}) {
      set_num_threads(threads);
      BOOST_TEST_CONTEXT("n " << n << ", threads " << threads) {
        BOOST_TEST(max_rel_diff(evaluate(plain, unfused), plain_one) == 0.0);
        BOOST_TEST(max_rel_diff(evaluate(plain, fused), plain_one) == 0.0);
        BOOST_TEST(max_rel_diff(evaluate(heads, fused), heads_one) == 0.0);
        BOOST_TEST(
            max_rel_diff(evaluate(split_heads<2>(project(cx, served.w_q, served.b_q)), fused),
                         heads_one) == 0.0);
        BOOST_TEST(max_rel_diff(evaluate(heads, unfused), heads_one) <= 1e-6);
        // Into a caller's tensor the product is written there directly: the same bits.
        tensor<float, typename decltype(heads)::shape_type> into(heads.shape());
        evaluate(heads, fused, into);
        BOOST_TEST(max_rel_diff(into, heads_one) == 0.0);
        evaluate(split_heads<2>(project(cx, served.w_q, served.b_q)), fused, into);
        BOOST_TEST(max_rel_diff(into, heads_one) == 0.0);
      }
    }
  }
  set_num_threads(0);
}
