// One module evaluated from several user threads at once: the persistent pool is shared by
// concurrent jobs (kernel/parallel.hpp), and each caller must get bitwise the result a lone
// caller gets. Also: for a fixed thread count (1, 2, 3), results are bitwise the same run
// after run, fused and unfused, with and without masks, for the prefill and decode loop nests.
// labels: threads
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace argus;

namespace {

using test::randomize;
using test::rng;

struct thread_count_guard {
  ~thread_count_guard() { set_num_threads(0); }
};

template <class A, class B>
bool bitwise_equal(const A& a, const B& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(*a.data())) == 0;
}

constexpr std::size_t d_model = 64, heads = 4;
using mha_t = multi_head_attention<d_model, heads, mha_options{.kv_heads = 2}>;
using activations = tensor<float, shape<batch<>, seq<>, model<d_model>>>;  // (B,SEQ,D_MODEL)

/// A module with random weights and biases, and inputs for a prefill and a decode step.
struct fixture {
  mha_t mha;
  activations xq{2, 37}, xkv{2, 53};      // prefill: 37 queries, 53 keys and values
  activations step{2, 1}, cache{2, 700};  // decode: one query over 700 keys (split-K)
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad{2, 53};  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs{37, 53};         // (SEQ_Q,SEQ_KV)
  tensor<float, shape<seq<>, seq<>>> add{37, 53};          // (SEQ_Q,SEQ_KV)

  fixture() {
    const double ws = 1.0 / std::sqrt(double(d_model));
    randomize(mha.w_q, 2 * ws), randomize(mha.w_k, 2 * ws), randomize(mha.w_v, ws);
    randomize(mha.w_o, ws);
    randomize(mha.b_q, 0.1), randomize(mha.b_k, 0.1), randomize(mha.b_v, 0.1);
    randomize(mha.b_o, 0.1);
    randomize(xq), randomize(xkv), randomize(step), randomize(cache), randomize(add);
    for (auto& p : pad) p = std::bernoulli_distribution(0.3)(rng());
    for (auto& p : pairs) p = std::bernoulli_distribution(0.25)(rng());
  }
};

/// Calls f(expression) for each case: self-attention with a causal mask, cross-attention
/// with every other mask kind, and a decode step.
template <class F>
void for_each_case(const fixture& x, F&& f) {
  f("self, causal", x.mha.forward(x.xq, causal));
  f("cross, ignore_where + add_to_scores + ignore_keys",
    x.mha.forward(x.xq, x.xkv, x.xkv, ignore_where(x.pairs), add_to_scores(x.add),
                  ignore_keys(x.pad)));
  f("decode, 1 query over 700 keys", x.mha.forward(x.step, x.cache, x.cache));
}

/// Every caller evaluates e `reps` times under policy p, into a new tensor and into an
/// existing one, and counts the results that differ bitwise from `expected`.
template <class E, class P, class R>
int mismatches_from_concurrent_callers(const E& e, P p, const R& expected, int callers, int reps) {
  std::atomic<int> mismatches{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&] {
      R into(expected.extent(0), expected.extent(1));
      // Start together, so that the callers' jobs overlap in the pool.
      ready.fetch_add(1);
      while (ready.load() < callers) std::this_thread::yield();
      for (int rep = 0; rep < reps; ++rep) {
        if (!bitwise_equal(evaluate(e, p), expected)) mismatches.fetch_add(1);
        evaluate(e, p, into);
        if (!bitwise_equal(into, expected)) mismatches.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  return mismatches.load();
}

}  // namespace

BOOST_AUTO_TEST_CASE(four_callers_get_the_lone_callers_result_bitwise) {
  thread_count_guard guard;
  const fixture x;
  for (std::size_t threads : {2u, 3u}) {
    set_num_threads(threads);
    for_each_case(x, [&](const char* name, const auto& e) {
      BOOST_TEST_CONTEXT(name << ", " << threads << " threads") {
        const auto lone_fused = evaluate(e, fused);
        const auto lone_unfused = evaluate(e, unfused);
        BOOST_TEST(mismatches_from_concurrent_callers(e, fused, lone_fused, 4, 6) == 0);
        BOOST_TEST(mismatches_from_concurrent_callers(e, unfused, lone_unfused, 4, 3) == 0);
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(results_are_bitwise_reproducible_for_a_fixed_thread_count) {
  thread_count_guard guard;
  const fixture x;
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    for_each_case(x, [&](const char* name, const auto& e) {
      BOOST_TEST_CONTEXT(name << ", " << threads << " threads") {
        const auto first_fused = evaluate(e, fused);
        const auto first_unfused = evaluate(e, unfused);
        int differ = 0;
        for (int run = 0; run < 8; ++run) {
          differ += !bitwise_equal(evaluate(e, fused), first_fused);
          differ += !bitwise_equal(evaluate(e, unfused), first_unfused);
        }
        BOOST_TEST(differ == 0);
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(each_thread_count_keeps_its_own_result_when_the_count_changes) {
  // The decode loop nest splits keys by num_threads(), so 1 and 3 threads may differ in the
  // last bits; switching back and forth gives each count's result again, bitwise.
  thread_count_guard guard;
  const fixture x;
  const auto e = x.mha.forward(x.step, x.cache, x.cache);  // split-K: depends on the count
  set_num_threads(1);
  const auto one = evaluate(e, fused);
  set_num_threads(3);
  const auto three = evaluate(e, fused);
  set_num_threads(1);
  BOOST_TEST(bitwise_equal(evaluate(e, fused), one));
  set_num_threads(3);
  BOOST_TEST(bitwise_equal(evaluate(e, fused), three));
  BOOST_TEST(test::max_rel_diff(one, three) <= 1e-5);
}
