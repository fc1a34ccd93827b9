// bench/attention_mha.cpp -- the full multi-head attention module, three evaluators.
//
// argus::multi_head_attention<DModel, H, mha_options{...}> with random weights and biases;
// mha.forward(x_q, x_kv, x_kv[, causal]) (x_kv = x_q for self-attention), batch 1, evaluated
// into an existing (batch, seq_q, d_model) tensor by
//   fused     evaluate(y, argus::fused, out): projections, then split-heads as views and the
//             attention core as one loop nest writing the merged heads, then W_o
//   unfused   evaluate(y, argus::unfused, out): every step materialised
//   eigen     the Eigen peer with the same weights (eigen_attention.hpp)
//   fused_prepacked  fused on the weights packed once (argus::prepack), in BM_mha only
//             (register.hpp's prepacked_evaluator)
//   onednn    oneDNN with the same weights (peers/onednn_attention.cpp): matmul primitives
//             for the projections, per head matmul, softmax, matmul
//   torch     libtorch's torch::nn::MultiheadAttention loaded with the same weights
//             (peers/torch_attention.cpp)
//   torch_native  libtorch's fused inference path for the same module,
//             at::_native_multi_head_attention: what Python's nn.MultiheadAttention runs in
//             eval() mode (the C++ module's forward() does not)
// (onednn and torch where the program is built with them, in BM_mha only, each checked once
// against fused). BM_mha is registered through argus/bench/register.hpp's register_module,
// the header users register their own modules with; the other families through add_rows.
// Rows (names read BM_mha/<evaluator>/n:1024/h:8/d_model:512/threads:1):
//   BM_mha          self-attention, n = 128 ... 8192, h 8, d_model 512 (d_k 64)
//   BM_mha_heads    h 1, 2, 4, 8, 16 at d_model 512, n 1024
//   BM_mha_width    d_model 256, 512, 1024 at h 8, n 1024
//   BM_mha_causal   causal self-attention, n 1024 and 4096
//   BM_mha_gqa      grouped-query: 8 query heads over kv_h 2 key/value heads
//   BM_mha_cross    n_q 256 queries attending a memory of n_kv 4096
//   BM_mha_decode   one query attending n_kv 1024, 4096, 8192 (K and V projected every call)
//   BM_mha_memory   n 16384, fused and eigen only: memory against the ideal (see below)
//   BM_mha_paired   BM_mha's shape at n 1, 16, 128, 1024, 4096: fused_vs_<other> for each of eigen,
//                   fused_prepacked, onednn, torch, torch_native, one fused call and one of
//                   the other per iteration, counters ratio (median other ÷ fused), ratio_q1,
//                   ratio_q3, fused_ms, other_ms (register.hpp)
//   BM_mha_parts    where the fused forward's time goes, at n 1024 and 4096, h 8, d_model 512:
//                   /project_heads  split_heads<8>(x·W_q + b_q): a projection written straight
//                                   into (B,H,SEQ,D_K), as the forward runs Q, K and V
//                   /project        x·W_o + b_o into (B,SEQ,D_MODEL): the output projection
//                   /core           merge_heads(attend(softmax(scores(q, k)), v)) on
//                                   (B,H,SEQ,D_K) tensors: the loop nest as the forward runs it
//                   /core_strided   the same on split_heads<8> views of (B,SEQ,D_MODEL)
//                                   tensors: rows h·d_k apart instead of d_k
//                   /forward        the whole fused forward, for the sum
//   BM_peak_fma     the FMA peak that peak_pct divides by
// each at threads 1 and 2 (BM_mha_memory at 2). Counters: attention_support.hpp; flops are
// the projections 2·B·(n_q·d_model·h·d_k + n_kv·kdim·kv_h·d_k + n_kv·vdim·kv_h·d_v +
// n_q·h·d_v·d_model) plus the core 4·B·h·n_q·n_kv·d_k (core halved for causal).
//
// BM_mha_memory also reports
//   rss_growth_mb   resident high-water mark during the row minus the resident size before
//                   its inputs were allocated: inputs, weights, output and every temporary
//   ideal_mb        inputs + weights (and biases) + Q, K, V + output: what any evaluator that
//                   materialises the projections must hold
//   memory_ratio    rss_growth_mb / ideal_mb (the target is < 1.5)
//   unfused_bytes_materialised  explain(y, unfused).materialised_bytes_into_out(), not run
//                               (8 GiB)
// It runs for one iteration; run it alone (--benchmark_filter=BM_mha_memory), as
// bench/run.py does, so that nothing else shares the process.
// smoke-filter: BM_mha(_paired)?/(fused[a-z_]*|unfused|eigen|onednn|torch)/n:128/.*/threads:1/
#include "attention_support.hpp"
#include <argus/argus.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using argus::bench::evaluator;
using argus::bench::row_args;
namespace peer = argus::bench::eigen_peer;

template <class Tensor>
void fill(Tensor& t, unsigned seed, float scale) {
  argus::bench::fill_random(t.data(), t.size(), seed, scale);
}

/// The module with random weights, and the Eigen peer's copy of them.
template <std::size_t DModel, std::size_t H, argus::mha_options O>
struct mha_fixture {
  using module_type = argus::multi_head_attention<DModel, H, O>;
  module_type mha;
  peer::mha_weights eigen{DModel,
                          H,
                          module_type::kv_heads,
                          module_type::d_k,
                          module_type::d_v,
                          module_type::kdim,
                          module_type::vdim};

  mha_fixture() {
    const float s = 1.0f / std::sqrt(float(DModel));
    fill(mha.w_q, 11, s), fill(mha.w_k, 12, s), fill(mha.w_v, 13, s), fill(mha.w_o, 14, s);
    fill(mha.b_q, 15, 0.1f), fill(mha.b_k, 16, 0.1f), fill(mha.b_v, 17, 0.1f),
        fill(mha.b_o, 18, 0.1f);
    copy(mha.w_q, eigen.w_q), copy(mha.w_k, eigen.w_k), copy(mha.w_v, eigen.w_v),
        copy(mha.w_o, eigen.w_o);
    copy(mha.b_q, eigen.b_q), copy(mha.b_k, eigen.b_k), copy(mha.b_v, eigen.b_v),
        copy(mha.b_o, eigen.b_o);
  }
  template <class Tensor, class Matrix>
  static void copy(const Tensor& from, Matrix& to) {
    std::copy_n(from.data(), from.size(), to.data());
  }
  static double flops(std::size_t sq, std::size_t skv, bool causal) {
    using m = module_type;
    return argus::bench::projection_flops(1, sq, skv, DModel, H, m::kv_heads, m::d_k, m::d_v,
                                          m::kdim, m::vdim) +
           argus::bench::core_flops(1, H, sq, skv, m::d_k, m::d_v, causal);
  }
  std::size_t weight_bytes() const {
    return (mha.w_q.size() + mha.w_k.size() + mha.w_v.size() + mha.w_o.size() + mha.b_q.size() +
            mha.b_k.size() + mha.b_v.size() + mha.b_o.size()) *
           sizeof(float);
  }
};

/// One row of module (DModel, H, O), with a causal mask when Causal.
template <std::size_t DModel, std::size_t H, argus::mha_options O, bool Causal>
void mha_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  const std::size_t sq = a.seq_q(state), skv = a.seq_kv(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  mha_fixture<DModel, H, O> f;
  using activation = tensor<float, shape<batch<>, seq<>, model<DModel>>>;
  activation xq(1, sq);                             // (B,SEQ_Q,D_MODEL)
  activation xkv(1, a.self_attention() ? 0 : skv);  // (B,SEQ_KV,D_MODEL)
  activation out(1, sq);                            // (B,SEQ_Q,D_MODEL)
  fill(xq, 1, 1.0f), fill(xkv, 2, 1.0f);
  const activation& keys = a.self_attention() ? xq : xkv;
  const activation& queries = xq;
  const auto y = [&] {
    if constexpr (Causal)
      return f.mha.forward(queries, keys, keys, causal);
    else
      return f.mha.forward(queries, keys, keys);
  }();
  const double flops = f.flops(sq, skv, Causal);
  switch (ev) {
    case evaluator::fused:
      bench::timed_loop(state, threads, flops,
                        double(explain(y, fused).materialised_bytes_into_out()),
                        [&] { evaluate(y, fused, out); });
      break;
    case evaluator::unfused:
      bench::timed_loop(state, threads, flops,
                        double(explain(y, unfused).materialised_bytes_into_out()),
                        [&] { evaluate(y, unfused, out); });
      break;
    case evaluator::eigen:
      bench::timed_loop(state, threads, flops,
                        double(peer::mha_bytes(f.eigen, 1, sq, skv, threads)), [&] {
                          peer::forward(f.eigen, 1, sq, skv, queries.data(), keys.data(),
                                        keys.data(), out.data(), Causal, threads);
                        });
      break;
    case evaluator::onednn:
    case evaluator::torch:  // BM_mha's peer rows come from register_module (below)
      state.SkipWithError("the library peers are registered through register_module");
      return;
  }
  if (bench::checking()) {
    const auto reference = ev == evaluator::fused ? evaluate(y, unfused) : evaluate(y, fused);
    bench::check_close(state, out.data(), reference.data(), out.size());
  }
}

/// BM_mha_memory: self-attention at n, d_model 512, h 8; see the header comment.
void mha_memory_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t d_model = 512;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  const double before = bench::rss_current_mib();
  mha_fixture<d_model, 8, mha_options{}> f;
  using activation = tensor<float, shape<batch<>, seq<>, model<d_model>>>;
  activation x(1, n);    // (B,SEQ,D_MODEL)
  activation out(1, n);  // (B,SEQ,D_MODEL)
  fill(x, 1, 1.0f);
  const activation& cx = x;
  const auto y = f.mha.forward(cx);
  const double flops = f.flops(n, n, false);
  if (ev == evaluator::fused)
    bench::timed_loop(state, threads, flops,
                      double(explain(y, fused).materialised_bytes_into_out()),
                      [&] { evaluate(y, fused, out); });
  else
    bench::timed_loop(state, threads, flops, double(peer::mha_bytes(f.eigen, 1, n, n, threads)),
                      [&] {
                        peer::forward(f.eigen, 1, n, n, cx.data(), cx.data(), cx.data(), out.data(),
                                      false, threads);
                      });
  const double mib = 1024.0 * 1024.0;
  const double ideal =
      (double(x.size() * sizeof(float) + f.weight_bytes()) +
       3.0 * double(n * d_model * sizeof(float)) + double(out.size() * sizeof(float))) /
      mib;
  const double growth = bench::rss_high_water_mib() - before;
  state.counters["rss_growth_mb"] = growth;
  state.counters["ideal_mb"] = ideal;
  state.counters["memory_ratio"] = growth / ideal;
  state.counters["unfused_bytes_materialised"] =
      benchmark::Counter(double(explain(y, unfused).materialised_bytes_into_out()),
                         benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
}

/// BM_mha_parts/<part>: one part of the fused forward (see the header comment).
enum class mha_part { project_heads, project, core, core_strided, forward };

void mha_part_row(benchmark::State& state, mha_part part, const row_args& a) {
  using namespace argus;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  mha_fixture<512, 8, mha_options{}> f;
  using activation = tensor<float, shape<batch<>, seq<>, model<512>>>;
  using heads = tensor<float, shape<batch<>, head<8>, seq<>, head_dim<64>>>;
  activation x(1, n), out(1, n);  // (B,SEQ,D_MODEL)
  fill(x, 1, 1.0f);
  const activation& cx = x;
  const double projection = bench::projection_flops(1, n, n, 512, 8, 8, 64, 64, 512, 512) / 4;
  const double core = bench::core_flops(1, 8, n, n, 64, 64, false);
  switch (part) {
    case mha_part::project_heads: {
      heads q(1, n);  // (B,H,SEQ,D_K)
      const auto e = split_heads<8>(project(cx, f.mha.w_q, f.mha.b_q));
      bench::timed_loop(state, threads, projection,
                        double(explain(e, fused).materialised_bytes_into_out()),
                        [&] { evaluate(e, fused, q); });
      break;
    }
    case mha_part::project: {
      const auto e = project(cx, f.mha.w_o, f.mha.b_o);
      bench::timed_loop(state, threads, projection,
                        double(explain(e, fused).materialised_bytes_into_out()),
                        [&] { evaluate(e, fused, out); });
      break;
    }
    case mha_part::core: {
      heads q(1, n), k(1, n), v(1, n);  // (B,H,SEQ,D_K) each
      fill(q, 2, 1.0f), fill(k, 3, 1.0f), fill(v, 4, 1.0f);
      const heads &cq = q, &ck = k, &cv = v;
      const auto e = merge_heads(attend(softmax(scores(cq, ck)), cv));
      bench::timed_loop(state, threads, core,
                        double(explain(e, fused).materialised_bytes_into_out()),
                        [&] { evaluate(e, fused, out); });
      break;
    }
    case mha_part::core_strided: {
      activation q(1, n), k(1, n), v(1, n);  // (B,SEQ,D_MODEL) each
      fill(q, 2, 1.0f), fill(k, 3, 1.0f), fill(v, 4, 1.0f);
      const activation &cq = q, &ck = k, &cv = v;
      const auto e = merge_heads(
          attend(softmax(scores(split_heads<8>(cq), split_heads<8>(ck))), split_heads<8>(cv)));
      bench::timed_loop(state, threads, core,
                        double(explain(e, fused).materialised_bytes_into_out()),
                        [&] { evaluate(e, fused, out); });
      break;
    }
    case mha_part::forward: {
      const auto y = f.mha.forward(cx);
      bench::timed_loop(state, threads, 4 * projection + core,
                        double(explain(y, fused).materialised_bytes_into_out()),
                        [&] { evaluate(y, fused, out); });
      break;
    }
  }
}

std::vector<std::vector<std::int64_t>> rows_over(
    const std::vector<std::vector<std::int64_t>>& configs) {
  std::vector<std::vector<std::int64_t>> rows;
  for (std::int64_t threads : {1, 2})
    for (auto r : configs) {
      r.push_back(threads);
      rows.push_back(r);
    }
  return rows;
}

const bool registered = [] {
  using argus::bench::add_rows;
  using argus::mha_options;
  argus::bench::add_peak_rows();
  argus::bench::add_peer_context();
  const std::vector<std::string> names{"n", "h", "d_model", "threads"};
  // BM_mha through the public registration (argus/bench/register.hpp), as a user would
  // register their own module: fused, unfused, then eigen; the library peers last, below.
  using bm_mha_module = argus::multi_head_attention<512, 8>;
  const std::vector<std::int64_t> bm_mha_seq{128, 256, 512, 1024, 2048, 4096, 8192};
  argus::bench::register_module<bm_mha_module>(
      "BM_mha", {.seq = bm_mha_seq,
                 .threads = {1, 2},
                 .others = {argus::bench::eigen_evaluator(),
                            argus::bench::prepacked_evaluator<bm_mha_module>()},
                 .check = argus::bench::checking()});
  add_rows("BM_mha_heads", mha_row<512, 1, mha_options{}, false>, names,
           rows_over({{1024, 1, 512}}));
  add_rows("BM_mha_heads", mha_row<512, 2, mha_options{}, false>, names,
           rows_over({{1024, 2, 512}}));
  add_rows("BM_mha_heads", mha_row<512, 4, mha_options{}, false>, names,
           rows_over({{1024, 4, 512}}));
  add_rows("BM_mha_heads", mha_row<512, 8, mha_options{}, false>, names,
           rows_over({{1024, 8, 512}}));
  add_rows("BM_mha_heads", mha_row<512, 16, mha_options{}, false>, names,
           rows_over({{1024, 16, 512}}));
  add_rows("BM_mha_width", mha_row<256, 8, mha_options{}, false>, names,
           rows_over({{1024, 8, 256}}));
  add_rows("BM_mha_width", mha_row<512, 8, mha_options{}, false>, names,
           rows_over({{1024, 8, 512}}));
  add_rows("BM_mha_width", mha_row<1024, 8, mha_options{}, false>, names,
           rows_over({{1024, 8, 1024}}));
  add_rows("BM_mha_causal", mha_row<512, 8, mha_options{}, true>, names,
           rows_over({{1024, 8, 512}, {4096, 8, 512}}));
  add_rows("BM_mha_gqa", mha_row<512, 8, mha_options{.kv_heads = 2}, false>,
           {"n", "h", "kv_h", "d_model", "threads"},
           rows_over({{1024, 8, 2, 512}, {4096, 8, 2, 512}}));
  add_rows("BM_mha_cross", mha_row<512, 8, mha_options{}, false>,
           {"n_q", "n_kv", "h", "d_model", "threads"}, rows_over({{256, 4096, 8, 512}}));
  add_rows("BM_mha_decode", mha_row<512, 8, mha_options{}, false>,
           {"n_kv", "h", "d_model", "threads"},
           rows_over({{1024, 8, 512}, {4096, 8, 512}, {8192, 8, 512}}));
  const std::pair<const char*, mha_part> parts[] = {{"project_heads", mha_part::project_heads},
                                                    {"project", mha_part::project},
                                                    {"core", mha_part::core},
                                                    {"core_strided", mha_part::core_strided},
                                                    {"forward", mha_part::forward}};
  for (const auto& [part_name, part] : parts) {
    const std::vector<std::string> part_names{"n", "h", "d_model", "threads"};
    benchmark::RegisterBenchmark((std::string("BM_mha_parts/") + part_name).c_str(),
                                 [part = part, part_names](benchmark::State& s) {
                                   mha_part_row(s, part, row_args::from(part_names));
                                 })
        ->Apply([](benchmark::internal::Benchmark* b) {
          for (std::int64_t threads : {1, 2})
            for (std::int64_t n : {1024, 4096}) b->Args({n, 8, 512, threads});
        })
        ->ArgNames(part_names)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (evaluator e : {evaluator::fused, evaluator::eigen}) {
    const std::string name = std::string("BM_mha_memory/") + argus::bench::evaluator_name(e);
    benchmark::RegisterBenchmark(
        name.c_str(),
        [e](benchmark::State& s) {
          mha_memory_row(s, e, row_args::from({"n", "h", "d_model", "threads"}));
        })
        ->Args({16384, 8, 512, 2})
        ->ArgNames({"n", "h", "d_model", "threads"})
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  // The library peers last: libtorch, once loaded, stays resident (peers/peers.hpp).
  argus::bench::register_module<bm_mha_module>("BM_mha",
                                               {.seq = bm_mha_seq,
                                                .threads = {1, 2},
                                                .fused = false,
                                                .unfused = false,
                                                .others = argus::bench::library_peer_evaluators()});
  // Fused and each other evaluator call by call: per-pair ratios, which the host's drift
  // between rows does not reach (register.hpp, module_rows::paired).
  std::vector<argus::bench::other_evaluator> paired_others{
      argus::bench::eigen_evaluator(), argus::bench::prepacked_evaluator<bm_mha_module>()};
  for (auto& peer : argus::bench::library_peer_evaluators()) paired_others.push_back(peer);
  argus::bench::register_module<bm_mha_module>("BM_mha_paired", {.seq = {1, 16, 128, 1024, 4096},
                                                                 .threads = {1, 2},
                                                                 .fused = false,
                                                                 .unfused = false,
                                                                 .others = paired_others,
                                                                 .paired = true});
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
