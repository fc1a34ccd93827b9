// What fused evaluation of a full multi-head attention into the caller's tensor allocates
// once warm: global operator new and delete are replaced here to count. The count is
// pinned, so that a new allocation fails this test; docs/reliability.md ("Threads and
// memory") says what each allocation is and why it is there.
//
// The calling thread makes every per-call allocation (the evaluator allocates results
// before its kernels start), so its count is exact and pinned. Pool workers only create
// their own scratch (gemm packing buffers, the loop nest's tiles) on first use and keep it:
// their count is bounded over many calls instead, since which worker first takes a task
// is up to the scheduler.
#include "../../support/counting_operator_new.hpp"
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>

// ---- counting operator new / delete -------------------------------------------------------

namespace {

thread_local bool test_thread = false;        // the thread that runs the test
thread_local bool counting_here = false;      // the test thread, while it evaluates
thread_local std::size_t here_count = 0;      // allocations it made
thread_local std::size_t here_bytes = 0;      // and their sizes
std::atomic<bool> counting_elsewhere{false};  // other threads, while the test measures
std::atomic<std::size_t> elsewhere_count{0};

}  // namespace

void argus::test::on_allocation(std::size_t bytes) noexcept {
  if (counting_here) {
    ++here_count;
    here_bytes += bytes;
  } else if (!test_thread && counting_elsewhere.load(std::memory_order_relaxed)) {
    elsewhere_count.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---- the module and its inputs ------------------------------------------------------------

using namespace argus;

namespace {

using test::randomize;
using test::rng;

struct thread_count_guard {
  ~thread_count_guard() { set_num_threads(0); }
};

struct counted {
  std::size_t count, bytes;
};

/// Allocations made by this thread during evaluate(e, fused, out).
template <class E, class O>
counted count_one_call(const E& e, O& out) {
  here_count = here_bytes = 0;
  counting_here = true;
  evaluate(e, fused, out);
  counting_here = false;
  return {here_count, here_bytes};
}

constexpr std::size_t d_model = 64, heads = 4, kv_heads = 2, d_k = 16, d_v = 16;
constexpr std::size_t batch_size = 2, seq_q = 37, seq_kv = 53, decode_kv = 700;
using mha_t = multi_head_attention<d_model, heads, mha_options{.kv_heads = kv_heads}>;
using activations = tensor<float, shape<batch<>, seq<>, model<d_model>>>;  // (B,SEQ,D_MODEL)

/// Bytes of the four buffers a fused forward into the caller's tensor allocates: Q
/// (B,H,SEQ_Q,D_K), K (B,G,SEQ_KV,D_K), V (B,G,SEQ_KV,D_V) and the merged attention output
/// (B,SEQ_Q,H·D_V). The output projection writes straight into the caller's tensor.
constexpr std::size_t forward_bytes(std::size_t b, std::size_t sq, std::size_t skv) {
  return sizeof(float) * b * (sq * heads * d_k + skv * kv_heads * (d_k + d_v) + sq * heads * d_v);
}

struct fixture {
  mha_t mha;
  activations xq{batch_size, seq_q}, xkv{batch_size, seq_kv};
  activations step{1, 1}, cache{1, decode_kv};  // one item: its keys split over 2 and 3 threads
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad{batch_size, seq_kv};  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs{seq_q, seq_kv};               // (SEQ_Q,SEQ_KV)
  tensor<float, shape<seq<>, seq<>>> add{seq_q, seq_kv};                // (SEQ_Q,SEQ_KV)

  fixture() {
    randomize(mha.w_q, 0.1), randomize(mha.w_k, 0.1), randomize(mha.w_v, 0.1);
    randomize(mha.w_o, 0.1), randomize(mha.b_q, 0.1), randomize(mha.b_o, 0.1);
    randomize(xq), randomize(xkv), randomize(step), randomize(cache), randomize(add);
    for (auto& p : pad) p = std::bernoulli_distribution(0.3)(rng());
    for (auto& p : pairs) p = std::bernoulli_distribution(0.25)(rng());
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(fused_forward_into_a_callers_tensor_allocates_its_four_intermediates) {
  thread_count_guard guard;
  test_thread = true;
  const fixture x;
  const auto self = x.mha.forward(x.xq, causal);
  const auto cross = x.mha.forward(x.xq, x.xkv, x.xkv, ignore_where(x.pairs), add_to_scores(x.add),
                                   ignore_keys(x.pad));
  const auto decode = x.mha.forward(x.step, x.cache, x.cache);
  activations out_prefill(batch_size, seq_q), out_decode(1, 1);

  // Warm up on one thread first: the calling thread's scratch then has its largest size
  // (more threads split a K/V head's query heads over more, smaller items).
  set_num_threads(1);
  for (int i = 0; i < 2; ++i) {
    evaluate(self, fused, out_prefill);
    evaluate(cross, fused, out_prefill);
    evaluate(decode, fused, out_decode);
  }
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    for (int i = 0; i < 3; ++i) {  // starts the pool's workers, which allocate on first use
      evaluate(self, fused, out_prefill);
      evaluate(cross, fused, out_prefill);
      evaluate(decode, fused, out_decode);
    }
    elsewhere_count = 0;
    counting_elsewhere = true;
    constexpr int calls = 10;
    for (int i = 0; i < calls; ++i) {
      BOOST_TEST_CONTEXT(threads << " threads, call " << i) {
        const counted s = count_one_call(self, out_prefill);
        BOOST_TEST(s.count == 4u);
        BOOST_TEST(s.bytes == forward_bytes(batch_size, seq_q, seq_q));
        // ignore_where's mask, summarised for the loop nest: a byte per key and block of 16
        // queries (kernel::detail::pair_mask_summary).
        const counted c = count_one_call(cross, out_prefill);
        BOOST_TEST(c.count == 5u);
        BOOST_TEST(c.bytes ==
                   forward_bytes(batch_size, seq_q, seq_kv) + (seq_q + 15) / 16 * seq_kv);
        // Decode on several threads splits the keys into chunks and adds one buffer for
        // the chunks' partial results: (m, l, d_v sums) per row and chunk.
        const counted d = count_one_call(decode, out_decode);
        const bool split = threads > 1;
        BOOST_TEST(d.count == (split ? 5u : 4u));
        if (split) {
          const std::size_t partial = d.bytes - forward_bytes(1, 1, decode_kv);
          const std::size_t per_chunk = sizeof(float) * heads * (d_v + 2);
          BOOST_TEST(d.bytes > forward_bytes(1, 1, decode_kv));
          BOOST_TEST(partial % per_chunk == 0u);
          BOOST_TEST(partial / per_chunk <= 2 * threads);  // chunks <= 2 · num_threads()
        } else {
          BOOST_TEST(d.bytes == forward_bytes(1, 1, decode_kv));
        }
      }
    }
    counting_elsewhere = false;
    // A worker that first takes a task now creates its scratch: gemm's two packing
    // buffers, the loop nest's tiles and row-set table, the last two grown at most once
    // from a prefill to a decode layout, so at most 6 buffers. Anything per call would show
    // up 30 times.
    BOOST_TEST(elsewhere_count.load() <= 6 * (threads - 1),
               threads << " threads: the workers allocated " << elsewhere_count.load()
                       << " times over " << 3 * calls << " calls");
  }
}

BOOST_AUTO_TEST_CASE(evaluation_into_out_allocates_what_explain_says) {
  // A root step that allocates its result writes it into out instead: the unfused core's
  // weighted sum, with or without a mask chain, the fused loop nest, a projection into split
  // heads, a merge of heads, the scores. The bytes a call allocates on the calling thread are
  // the plan's materialised_bytes_into_out(), for both policies, and less than 1 KiB of
  // bookkeeping (the masked weighted sum's list of non-finite V rows per (b, g)). Every
  // output is at least 5 KiB: a step that stopped writing into out would fail this, and so
  // would one that explain() says writes into out and does not.
  thread_count_guard guard;
  test_thread = true;
  set_num_threads(1);
  using heads = tensor<float, shape<batch<>, head<2>, seq<>, head_dim<8>>>;  // (B,2,SEQ,8)
  heads q(2, 40), k(2, 40), v(2, 40), out(2, 40);
  randomize(q), randomize(k), randomize(v);
  const heads &cq = q, &ck = k, &cv = v;
  const auto plain = attend(softmax(scores(cq, ck)), cv);
  const auto masked = attend(softmax(mask(scores(cq, ck), causal)), cv);
  auto check_into = [&](const auto& e, const auto& policy, auto& into, const char* what) {
    BOOST_TEST_CONTEXT(what) {
      evaluate(e, policy, into);  // warm: per-thread scratch
      here_count = here_bytes = 0;
      counting_here = true;
      evaluate(e, policy, into);
      counting_here = false;
      const std::size_t planned = explain(e, policy).materialised_bytes_into_out();
      BOOST_TEST(here_bytes >= planned);
      BOOST_TEST(here_bytes < planned + 1024);
    }
  };
  auto check = [&](const auto& e, const auto& policy, const char* what) {
    check_into(e, policy, out, what);
  };
  check(plain, unfused, "unfused, no mask");
  check(masked, unfused, "unfused, causal");
  check(plain, fused, "fused, no mask");
  check(masked, fused, "fused, causal");
  // A projection into split heads writes its product straight into out (fused: planned 0).
  using activation = tensor<float, shape<batch<>, seq<>, model<16>>>;
  activation x(2, 40);
  tensor<float, shape<model<16>, model<16>>> w;
  tensor<float, shape<model<16>>> b;
  randomize(x), randomize(w), randomize(b);
  const activation& cx = x;
  const auto& cw = w;
  const auto& cb = b;
  const auto projected = split_heads<2>(project(cx, cw, cb));
  BOOST_TEST(explain(projected, fused).materialised_bytes_into_out() == 0u);
  check(projected, fused, "fused split_heads(x·W + b)");
  check(projected, unfused, "unfused split_heads(x·W + b)");
  // Splitting heads copies straight into out (unfused), or is a view copied there (fused).
  const auto split = split_heads<2>(cx);
  BOOST_TEST(explain(split, unfused).materialised_bytes_into_out() == 0u);
  check(split, unfused, "unfused split_heads(x)");
  check(split, fused, "fused split_heads(x)");
  // The unfused merge of heads copies straight into out, and the scores are written there.
  const auto merged = merge_heads(plain);
  auto merged_out = evaluate(merged, fused);  // (B,SEQ,16)
  const plan merged_plan = explain(merged, unfused);
  BOOST_TEST(merged_plan.steps.front().into_out);
  BOOST_TEST(merged_plan.materialised_bytes_into_out() ==
             merged_plan.materialised_bytes() - merged_out.size() * sizeof(float));
  check_into(merged, unfused, merged_out, "unfused merge_heads(...)");
  check_into(merged, fused, merged_out, "fused merge_heads(...)");
  const auto logits = scores(cq, ck);
  auto logits_out = evaluate(logits, unfused);  // (B,2,SEQ,SEQ)
  BOOST_TEST(explain(logits, unfused).materialised_bytes_into_out() == 0u);
  check_into(logits, unfused, logits_out, "unfused scores(q, k)");
  check_into(logits, fused, logits_out, "fused scores(q, k)");
  // A mask or the softmax at the root works in place on out: the scores are written there
  // (planned 0, with explain() marking the scores' step), then masked and normalised in out.
  tensor<float, shape<seq<>, seq<>>> add(40, 40);
  randomize(add);
  const auto& cadd = add;
  const auto weights = softmax(scores(cq, ck));
  const auto masked_logits = mask(scores(cq, ck), causal, add_to_scores(cadd));
  const auto masked_weights = softmax(mask(scores(cq, ck), causal, add_to_scores(cadd)));
  for (const plan& in_place : {explain(weights, unfused), explain(masked_logits, unfused),
                               explain(masked_weights, fused)}) {
    BOOST_TEST(in_place.materialised_bytes_into_out() == 0u);
    BOOST_TEST(in_place.materialised_bytes() == logits_out.size() * sizeof(float));
    BOOST_TEST(in_place.to_string().find("scores Q·Kᵀ·scale per head (kernel::gemm_nt)  -> "
                                         "(2,2,40,40), 25600 bytes (written straight into out") !=
               std::string::npos);
  }
  check_into(weights, unfused, logits_out, "unfused softmax(scores(q, k))");
  check_into(weights, fused, logits_out, "fused softmax(scores(q, k))");
  check_into(masked_logits, unfused, logits_out, "unfused mask(scores(q, k), ...)");
  check_into(masked_weights, unfused, logits_out, "unfused softmax(mask(scores(q, k), ...))");
  check_into(masked_weights, fused, logits_out, "fused softmax(mask(scores(q, k), ...))");
  // Heads split from one position are already row-major: no copy, and explain() says so.
  activation x1(2, 1);
  randomize(x1);
  const activation& cx1 = x1;
  const auto one_position = scores(split_heads<2>(cx1), split_heads<2>(cx1));
  auto one_position_out = evaluate(one_position, unfused);  // (B,2,1,1)
  const plan one_position_plan = explain(one_position, unfused);
  BOOST_TEST(one_position_plan.materialised_bytes() == one_position_out.size() * sizeof(float));
  BOOST_TEST(one_position_plan.to_string().find("(a view: already row-major, no copy)") !=
             std::string::npos);
  check_into(one_position, unfused, one_position_out, "unfused scores of one position");
}
