// labels: memory
// What kernel::flash_attention_backward allocates, against flash_attention_backward_bytes:
// the figure the benchmarks report as the fused backward's bytes materialised and that
// docs/explanation/training.md quotes. Global operator new is replaced here to count on every
// thread. Each case runs its first call on a fresh thread, whose per-thread tiles (and gemm's
// packing buffers, where it needs them) are then allocated during that call: on one thread
// the count is exact; on two, the pool's worker keeps the tiles of an earlier case, and
// either thread may take no item (the calling thread took none in about a third of the runs
// beside another process), so the count lies between the bound less every thread's tiles
// (what remains: D and the partial dQ, allocated by the calling thread) and the bound.
#include "../../support/counting_operator_new.hpp"
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/parallel.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// ---- counting operator new / delete -------------------------------------------------------

namespace {

std::atomic<bool> counting{false};
std::atomic<std::size_t> counted_bytes{0};

}  // namespace

void argus::test::on_allocation(std::size_t bytes) noexcept {
  if (counting.load(std::memory_order_relaxed))
    counted_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

namespace {

using argus::kernel::attention_backward_problem;
using argus::kernel::attention_problem;

struct config {
  std::size_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_kv = 1, d_k = 16, d_v = 16;
  bool causal = false;
  bool padding = false;  // a key_ignore mask: every fifth key
  bool pairs = false;    // a pair mask shared by every batch item and head: i + j odd
  std::size_t threads = 1;

  std::string describe() const {
    std::ostringstream s;
    s << "B=" << batch << " h=" << heads << "/" << kv_heads << " n_q=" << seq_q
      << " n_kv=" << seq_kv << " d_k=" << d_k << " d_v=" << d_v << (causal ? " causal" : "")
      << (padding ? " padding" : "") << (pairs ? " pairs" : "") << " threads=" << threads;
    return s.str();
  }
};

/// A problem's operands, its forward run (for O and the log-sum-exp) and its gradients.
template <class T>
struct case_data {
  config c;
  std::vector<T> q, k, v, o, lse, d_o, d_q, d_k, d_v;
  std::vector<std::uint8_t> pad, pairs;
  attention_backward_problem<T> bp{};

  explicit case_data(const config& cfg) : c(cfg) {
    std::mt19937 g(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto fill = [&](std::vector<T>& x, std::size_t n) {
      x.resize(n);
      for (auto& e : x) e = static_cast<T>(u(g));
    };
    fill(q, c.batch * c.heads * c.seq_q * c.d_k);
    fill(k, c.batch * c.kv_heads * c.seq_kv * c.d_k);
    fill(v, c.batch * c.kv_heads * c.seq_kv * c.d_v);
    fill(d_o, c.batch * c.heads * c.seq_q * c.d_v);
    o.assign(d_o.size(), T(0)), lse.assign(c.batch * c.heads * c.seq_q, T(0));
    d_q.assign(q.size(), T(0)), d_k.assign(k.size(), T(0)), d_v.assign(v.size(), T(0));
    if (c.padding) {
      pad.assign(c.batch * c.seq_kv, 0);
      for (std::size_t j = 0; j < pad.size(); j += 5) pad[j] = 1;
    }
    if (c.pairs) {
      pairs.resize(c.seq_q * c.seq_kv);
      for (std::size_t x = 0; x < pairs.size(); ++x)
        pairs[x] = (x / c.seq_kv + x % c.seq_kv) % 2 == 1 ? 1 : 0;
    }
    attention_problem<T>& p = bp.f;
    p.batch = c.batch, p.heads = c.heads, p.kv_heads = c.kv_heads;
    p.seq_q = c.seq_q, p.seq_kv = c.seq_kv, p.d_k = c.d_k, p.d_v = c.d_v;
    p.q = q.data(), p.q_batch = c.heads * c.seq_q * c.d_k, p.q_head = c.seq_q * c.d_k;
    p.q_row = c.d_k;
    p.k = k.data(), p.k_batch = c.kv_heads * c.seq_kv * c.d_k, p.k_head = c.seq_kv * c.d_k;
    p.k_row = c.d_k;
    p.v = v.data(), p.v_batch = c.kv_heads * c.seq_kv * c.d_v, p.v_head = c.seq_kv * c.d_v;
    p.v_row = c.d_v;
    p.o = o.data(), p.o_batch = c.heads * c.seq_q * c.d_v, p.o_head = c.seq_q * c.d_v;
    p.o_row = c.d_v;
    p.lse = lse.data(), p.lse_batch = c.heads * c.seq_q, p.lse_head = c.seq_q;
    p.scale = static_cast<T>(1.0 / std::sqrt(double(c.d_k)));
    p.causal = c.causal;
    if (c.padding) p.key_ignore = pad.data(), p.key_ignore_batch = c.seq_kv;
    if (c.pairs) p.ignore = pairs.data(), p.ignore_row = c.seq_kv;  // (summarised once)
    argus::kernel::flash_attention(p);
    bp.lse = lse.data(), bp.d_o = d_o.data();
    bp.d_q = d_q.data(), bp.d_k = d_k.data(), bp.d_v = d_v.data();
  }
};

struct thread_count_guard {
  ~thread_count_guard() { argus::set_num_threads(0); }
};

/// Bytes every thread allocated during one flash_attention_backward(bp), called from a
/// thread that has never run a kernel.
template <class T>
std::size_t bytes_of_a_first_call(const attention_backward_problem<T>& bp) {
  std::size_t bytes = 0;
  std::thread fresh([&] {
    counted_bytes = 0;
    counting = true;
    argus::kernel::flash_attention_backward(bp);
    counting = false;
    bytes = counted_bytes.load();
  });
  fresh.join();
  return bytes;
}

/// One thread's share of flash_attention_backward_bytes: on one thread the figure is D
/// (a value per query row), the pair mask's summary and that thread's tiles.
template <class T>
std::size_t one_threads_tiles(const attention_backward_problem<T>& bp) {
  const attention_problem<T>& p = bp.f;
  return argus::kernel::flash_attention_backward_bytes(bp, 1) -
         p.batch * p.heads * p.seq_q * sizeof(T) -
         argus::kernel::detail::pair_mask_summary::bytes(p);
}

template <class T>
void check(const config& c) {
  BOOST_TEST_CONTEXT(c.describe() << (sizeof(T) == 4 ? " float" : " double")) {
    thread_count_guard guard;
    argus::set_num_threads(c.threads);
    case_data<T> data(c);  // runs the forward: the dispatcher has chosen its kernels
    // The pool's workers exist before counting (starting one allocates).
    argus::kernel::parallel_for(c.threads, [](std::size_t, std::size_t) {});
    const std::size_t bound = argus::kernel::flash_attention_backward_bytes(data.bp, c.threads);
    const std::size_t got = bytes_of_a_first_call(data.bp);
    if (c.threads == 1) {
      BOOST_TEST(got == bound);
    } else {
      BOOST_TEST(got <= bound);
      BOOST_TEST(got >= bound - c.threads * one_threads_tiles(data.bp));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_thread_allocates_what_the_bytes_function_says) {
  constexpr std::size_t kc = argus::kernel::detail::gemm_tile<float>::kc;  // 256 or 512
  static_assert(kc == argus::kernel::detail::gemm_tile<double>::kc);
  const config cases[] = {
      {.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 100, .seq_kv = 300},  // fused slivers
      {.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 100, .seq_kv = 300, .padding = true},
      {.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 100, .seq_kv = 300, .pairs = true},
      {.batch = 1, .heads = 2, .kv_heads = 1, .seq_q = 150, .seq_kv = 150, .causal = true},
      {.batch = 1, .heads = 2, .kv_heads = 2, .seq_q = 9, .seq_kv = 40, .d_k = 64, .d_v = 32},
      // Heads wider than gemm_tile::kc: the slivers go through gemm's packing buffers.
      {.seq_q = 20, .seq_kv = 30, .d_k = kc + 44, .d_v = kc + 4},
      {.seq_q = 20, .seq_kv = 30, .d_k = 8, .d_v = kc + 14, .padding = true},
  };
  for (const config& c : cases) {
    check<float>(c);
    check<double>(c);
  }
}

BOOST_AUTO_TEST_CASE(two_threads_allocate_within_the_bytes_function) {
  // One (batch item, K/V head) pair for two threads: the key-tile columns are dealt to two
  // tasks, and the second adds into a partial dQ. Then enough pairs for one task each.
  const config cases[] = {
      {.heads = 2, .kv_heads = 1, .seq_q = 70, .seq_kv = 600, .threads = 2},
      {.batch = 2,
       .heads = 2,
       .kv_heads = 2,
       .seq_q = 70,
       .seq_kv = 300,
       .padding = true,
       .threads = 2},
      {.batch = 2,
       .heads = 2,
       .kv_heads = 1,
       .seq_q = 130,
       .seq_kv = 300,
       .pairs = true,
       .threads = 2},
  };
  for (const config& c : cases) {
    check<float>(c);
    check<double>(c);
  }
}
