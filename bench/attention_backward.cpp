// bench/attention_backward.cpp -- the backward pass of the attention core, kernel level.
//
// Q, K, V, O, dO of batch 1, h heads of d_k = d_v = 64, in the head-major layout; the
// forward (kernel::flash_attention, which also writes the per-row log-sum-exp) runs once
// before timing. Each row times the gradients dQ, dK, dV:
//   fused     kernel::flash_attention_backward: FlashAttention-2, key tiles own dK/dV, no
//             (seq_q × seq_kv) buffer
//   unfused   kernel::attention_backward_unfused: S, P, dP materialised per head, kernel::gemm
//   eigen     the same steps written with Eigen 3.4 (eigen_attention_backward.hpp)
// Rows: BM_backward n 512 ... 4096 (h 8), BM_backward_causal n 1024 and 4096, threads 1 and 2;
// BM_backward_padded n 1024 and 4096, 1 thread, fused and unfused: the last eighth of the keys
// padded (kernel::attention_problem::key_ignore); BM_backward_padded_batch: a batch of 4
// sequences of n, 3n/4, n/2 and n/4 positions padded to n; BM_backward_documents: packed
// documents of 256 positions (an (n, n) pair mask, attention_problem::ignore). Their flops are
// counted as without the masks, whatever the fused backward skips (key tiles of padding only,
// tiles of pairs across documents only), so that GFLOP/s compare times.
// Dropout on the attention weights (kernel/dropout.hpp), rate 0 and 0.1 side by side, n 1024
// and 4096 on 1 thread: BM_dropout_forward times the forward (flash_attention or
// attention_unfused), BM_dropout_backward the backward of a forward with that rate (flops as
// without dropout, so GFLOP/s falls by the generator's cost).
// flops: the five products of the backward (S = QKᵀ, dV = PᵀdO, dP = dOVᵀ, dQ = dS K,
// dK = dSᵀQ), 2 flops per multiply-add: 2.5 × bench::core_flops (10·B·h·n_q·n_kv·d),
// halved for causal; the fused kernel's recomputation of S is counted once, as in
// FlashAttention-2's own reports. bytes_materialised: the fused kernel's scratch, or the
// unfused kernel's three (n_q × n_kv) buffers per thread, or Eigen's two.
// BM_forward_backward times the forward (with the log-sum-exp) and the backward together,
// n 1024 and 4096, 1 thread: flops 3.5 × core_flops (2 forward products, 5 backward).
// BM_train_step times one training step of multi_head_attention<512, 8> (forward_for_training
// + backward, every gradient), self-attention, batch 1, n 1024 and 4096, 1 thread, under the
// fused and the unfused policy: flops 3.5 × core_flops + 24 · n · d_model² (12 products of the
// projections: 4 forward, 4 weight gradients, 4 input gradients).
// BM_train_memory: one training step of multi_head_attention<512, 8> (forward_for_training
// + backward, fused, self-attention, batch 1, n 16384, 2 threads, one iteration) against the
// ideal: input x, weights and biases, output, and the gradients (x_q, x_k, x_v and every
// parameter): rss_growth_mb, ideal_mb, memory_ratio = growth / ideal (the target is < 2).
// Run it alone (--benchmark_filter=BM_train_memory): the high-water mark is per process.
// smoke-filter: BM_backward/(fused|unfused)/n:512/h:8/threads:1
#include "attention_support.hpp"
#include "eigen_attention_backward.hpp"
#include <argus/argus.hpp>
#include <argus/grad/training.hpp>
#include <argus/kernel/attention_backward.hpp>
#include <argus/kernel/flash_attention.hpp>
#include <argus/kernel/flash_attention_backward.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using argus::bench::evaluator;
using argus::bench::row_args;

enum class pass { forward, backward, both };

/// The masks of a row besides Causal: none; the last eighth of the keys padding (tail); a
/// padded batch of 4 sequences of n, 3n/4, n/2 and n/4 positions (batch); packed documents
/// of 256 positions, an (n, n) pair mask (documents).
enum class masks { none, tail, batch, documents };

/// DropoutArg: the row's fourth argument is the dropout rate in percent.
template <bool Causal, pass Timed = pass::backward, bool DropoutArg = false,
          masks Masks = masks::none>
void backward_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t d = 64, batch = Masks == masks::batch ? 4 : 1;
  const std::size_t h = std::size_t(state.range(1));
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  const std::size_t item = h * n * d, elems = batch * item;
  std::vector<float> q(elems), k(elems), v(elems), o(elems), d_o(elems),
      lse(batch * h * n);  // (B,H,N,D) each
  std::vector<float> dq(elems), dk(elems), dv(elems);
  bench::fill_random(q.data(), elems, 1, 1.0f);
  bench::fill_random(k.data(), elems, 2, 1.0f);
  bench::fill_random(v.data(), elems, 3, 1.0f);
  bench::fill_random(d_o.data(), elems, 4, 1.0f);
  kernel::attention_backward_problem<float> bp;
  kernel::attention_problem<float>& p = bp.f;
  p.batch = batch, p.heads = h, p.kv_heads = h, p.seq_q = n, p.seq_kv = n, p.d_k = d, p.d_v = d;
  p.q = q.data(), p.q_batch = item, p.q_head = n * d, p.q_row = d;
  p.k = k.data(), p.k_batch = item, p.k_head = n * d, p.k_row = d;
  p.v = v.data(), p.v_batch = item, p.v_head = n * d, p.v_row = d;
  p.o = o.data(), p.o_batch = item, p.o_head = n * d, p.o_row = d;
  p.scale = 1.0f / std::sqrt(float(d));
  p.causal = Causal;
  p.lse = lse.data(), p.lse_batch = h * n, p.lse_head = n;
  std::vector<std::uint8_t> padding(batch * n, 0);  // (B,N): 1 for a padded key
  std::vector<std::uint8_t> pairs;                  // (N,N): 1 for a pair across documents
  if constexpr (Masks == masks::tail)
    std::fill(padding.end() - std::ptrdiff_t(n / 8), padding.end(), std::uint8_t(1));
  if constexpr (Masks == masks::batch)
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t j = 0; j < n; ++j) padding[b * n + j] = j >= n * (batch - b) / batch;
  if constexpr (Masks == masks::tail || Masks == masks::batch)
    p.key_ignore = padding.data(), p.key_ignore_batch = n;
  if constexpr (Masks == masks::documents) {
    pairs.resize(n * n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) pairs[i * n + j] = i / 256 != j / 256;
    p.ignore = pairs.data(), p.ignore_row = n;
  }
  if (DropoutArg && state.range(3) > 0)
    p.dropout_rate = float(state.range(3)) / 100.0f, p.dropout_seed = 99;
  if constexpr (Timed == pass::forward) {
    const double fwd = bench::core_flops(batch, h, n, n, d, d, Causal);
    if (ev == evaluator::fused)
      bench::timed_loop(state, threads, fwd, double(kernel::flash_attention_scratch_bytes(p)),
                        [&] { kernel::flash_attention(p); });
    else
      bench::timed_loop(state, threads, fwd, double(n * n * sizeof(float) * std::size_t(threads)),
                        [&] { kernel::attention_unfused(p); });
    return;
  }
  bp.lse = lse.data(), bp.d_o = d_o.data(), bp.d_q = dq.data(), bp.d_k = dk.data(),
  bp.d_v = dv.data();
  // The Eigen peer on the same (H,N,D) buffers (head stride n · d).
  namespace ep = bench::eigen_peer;
  const ep::core_dims dims{batch, h, h, n, n, d, d};
  const std::size_t hs = n * d;
  auto eigen_backward = [&] {
    ep::backward(dims, {q.data(), item, hs, d}, {k.data(), item, hs, d}, {v.data(), item, hs, d},
                 {d_o.data(), item, hs, d}, {dq.data(), item, hs, d}, {dk.data(), item, hs, d},
                 {dv.data(), item, hs, d}, p.scale, Causal, threads);
  };
  if constexpr (Timed == pass::both) {
    const double both = 3.5 * bench::core_flops(batch, h, n, n, d, d, Causal);
    if (ev == evaluator::eigen) {
      bench::timed_loop(
          state, threads, both,
          double(ep::backward_bytes(dims, threads) + ep::core_bytes(dims, threads)), [&] {
            ep::core(dims, {q.data(), item, hs, d}, {k.data(), item, hs, d},
                     {v.data(), item, hs, d}, {o.data(), item, hs, d}, p.scale, Causal, threads);
            eigen_backward();
          });
    } else if (ev == evaluator::fused) {
      bench::timed_loop(state, threads, both,
                        double(kernel::flash_attention_backward_bytes(bp, std::size_t(threads))),
                        [&] {
                          kernel::flash_attention(p);
                          kernel::flash_attention_backward(bp);
                        });
    } else {
      bench::timed_loop(state, threads, both,
                        double(3 * n * n * sizeof(float) * std::size_t(threads)), [&] {
                          kernel::attention_unfused(p);
                          kernel::attention_backward_unfused(bp);
                        });
    }
    return;
  }
  kernel::flash_attention(p);
  const double flops = 2.5 * bench::core_flops(batch, h, n, n, d, d, Causal);
  if (ev == evaluator::eigen) {
    bench::timed_loop(state, threads, flops, double(ep::backward_bytes(dims, threads)),
                      eigen_backward);
    if (bench::checking()) {
      std::vector<float> got = dq;
      kernel::attention_backward_unfused(bp);
      bench::check_close(state, got.data(), dq.data(), elems);
    }
    return;
  }
  if (ev == evaluator::fused)
    bench::timed_loop(state, threads, flops,
                      double(kernel::flash_attention_backward_bytes(bp, std::size_t(threads))),
                      [&] { kernel::flash_attention_backward(bp); });
  else
    bench::timed_loop(state, threads, flops,
                      double(3 * n * n * sizeof(float) * std::size_t(threads)),
                      [&] { kernel::attention_backward_unfused(bp); });
  if (bench::checking()) {
    std::vector<float> got = dq;
    bp.d_q = dq.data();
    if (ev == evaluator::fused)
      kernel::attention_backward_unfused(bp);
    else
      kernel::flash_attention_backward(bp);
    bench::check_close(state, got.data(), dq.data(), elems);
  }
}

/// The layer of BM_train_memory and BM_train_step, self-attention, batch 1: its weights and
/// its x and dout (B,SEQ,D_MODEL), random.
struct training_layer {
  static constexpr std::size_t d_model = 512;
  using mha = argus::multi_head_attention<d_model, 8>;
  using activation =
      argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<d_model>>>;
  mha m;
  activation x, dout;
  explicit training_layer(std::size_t n) : x(1, n), dout(1, n) {
    const float s = 1.0f / std::sqrt(float(d_model));
    argus::bench::fill_random(m.w_q.data(), m.w_q.size(), 11, s);
    argus::bench::fill_random(m.w_k.data(), m.w_k.size(), 12, s);
    argus::bench::fill_random(m.w_v.data(), m.w_v.size(), 13, s);
    argus::bench::fill_random(m.w_o.data(), m.w_o.size(), 14, s);
    argus::bench::fill_random(x.data(), x.size(), 1, 1.0f);
    argus::bench::fill_random(dout.data(), dout.size(), 2, 1.0f);
  }
};

/// BM_train_step: see the header comment.
void train_step_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t d = training_layer::d_model;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  training_layer layer(n);
  // The core: 2 forward and 5 backward products. The projections: 4 forward products
  // (n × d × d each) and 8 backward ones (each weight's gradient and each input's).
  const double flops = 3.5 * bench::core_flops(1, 8, n, n, 64, 64, false) +
                       12.0 * 2.0 * double(n) * double(d) * double(d);
  auto step = [&](const auto& policy) {
    auto tape = forward_for_training(layer.m, policy, layer.x);
    const auto g = backward(tape, layer.dout, policy);
    benchmark::DoNotOptimize(g.w_q.data());
  };
  if (ev == evaluator::fused)
    bench::timed_loop(state, threads, flops, 0.0, [&] { step(fused); });
  else
    bench::timed_loop(state, threads, flops, 0.0, [&] { step(unfused); });
}

/// BM_train_memory: see the header comment.
void train_memory_row(benchmark::State& state, evaluator, const row_args& a) {
  using namespace argus;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  const double before = bench::rss_current_mib();
  training_layer layer(n);
  const auto& m = layer.m;
  const auto& x = layer.x;
  const auto& dout = layer.dout;
  const double flops = 3.5 * bench::core_flops(1, 8, n, n, 64, 64, false);  // the core only
  double grads = 0;
  bench::timed_loop(state, threads, flops, 0.0, [&] {
    auto tape = forward_for_training(m, fused, x);
    const auto g = backward(tape, dout, fused);
    benchmark::DoNotOptimize(g.w_q.data());
    grads = double((g.x_q.size() + g.x_k.size() + g.x_v.size()) * sizeof(float));
  });
  const double mib = 1024.0 * 1024.0;
  const double weights = double((m.w_q.size() + m.w_k.size() + m.w_v.size() + m.w_o.size() +
                                 m.b_q.size() + m.b_k.size() + m.b_v.size() + m.b_o.size()) *
                                sizeof(float));
  // x, dout, weights, the output, and the gradients of x (three) and of every parameter.
  const double ideal = (double(2 * x.size() * sizeof(float)) + 2 * weights +
                        double(x.size() * sizeof(float)) + grads) /
                       mib;
  const double growth = bench::rss_high_water_mib() - before;
  state.counters["rss_growth_mb"] = growth;
  state.counters["ideal_mb"] = ideal;
  state.counters["memory_ratio"] = growth / ideal;
}

std::vector<std::vector<std::int64_t>> rows(const std::vector<std::int64_t>& ns) {
  std::vector<std::vector<std::int64_t>> r;
  for (std::int64_t threads : {1, 2})
    for (std::int64_t n : ns) r.push_back({n, 8, threads});
  return r;
}

/// n 1024 and 4096, h 8, 1 thread, dropout rate 0 and 10 %.
std::vector<std::vector<std::int64_t>> dropout_rows() {
  std::vector<std::vector<std::int64_t>> r;
  for (std::int64_t n : {1024, 4096})
    for (std::int64_t pct : {0, 10}) r.push_back({n, 8, 1, pct});
  return r;
}

const bool registered = [] {
  using argus::bench::add_rows;
  const std::vector<evaluator> evs{evaluator::fused, evaluator::unfused, evaluator::eigen};
  // Dropout and the training step: argus's evaluators only.
  const std::vector<evaluator> argus_only{evaluator::fused, evaluator::unfused};
  argus::bench::add_peak_rows();
  add_rows("BM_backward", backward_row<false>, {"n", "h", "threads"}, rows({512, 1024, 2048, 4096}),
           evs);
  // n 8192, fused only (the unfused backward's per-head P and dP would be 256 MiB each).
  add_rows("BM_backward", backward_row<false>, {"n", "h", "threads"}, {{8192, 8, 1}},
           {evaluator::fused});
  add_rows("BM_backward_causal", backward_row<true>, {"n", "h", "threads"}, rows({1024, 4096}),
           evs);
  add_rows("BM_backward_padded", backward_row<false, pass::backward, false, masks::tail>,
           {"n", "h", "threads"}, {{1024, 8, 1}, {4096, 8, 1}}, argus_only);
  add_rows("BM_backward_padded_batch", backward_row<false, pass::backward, false, masks::batch>,
           {"n", "h", "threads"}, {{1024, 8, 1}, {4096, 8, 1}}, argus_only);
  add_rows("BM_backward_documents", backward_row<false, pass::backward, false, masks::documents>,
           {"n", "h", "threads"}, {{1024, 8, 1}, {4096, 8, 1}}, argus_only);
  add_rows("BM_forward_backward", backward_row<false, pass::both>, {"n", "h", "threads"},
           {{1024, 8, 1}, {4096, 8, 1}}, evs);
  add_rows("BM_train_step", train_step_row, {"n", "h", "threads"}, {{1024, 8, 1}, {4096, 8, 1}},
           argus_only);
  benchmark::RegisterBenchmark(
      "BM_train_memory/fused",
      [](benchmark::State& s) {
        train_memory_row(s, evaluator::fused, row_args::from({"n", "h", "d_model", "threads"}));
      })
      ->Args({16384, 8, 512, 2})
      ->ArgNames({"n", "h", "d_model", "threads"})
      ->Iterations(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  add_rows("BM_dropout_forward", backward_row<false, pass::forward, true>,
           {"n", "h", "threads", "dropout_pct"}, dropout_rows(), argus_only);
  add_rows("BM_dropout_backward", backward_row<false, pass::backward, true>,
           {"n", "h", "threads", "dropout_pct"}, dropout_rows(), argus_only);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
