// bench/attention_core.cpp -- the attention core through the library, three evaluators.
//
// The expression attend(softmax(scores(q, k))) (with mask(..., causal) for the causal rows)
// on split-heads tensors q (batch, head<H>, seq_q, head_dim<D_K>), k and v (batch, head<G>,
// seq_kv, head_dim<D_K>), batch 1, evaluated into an existing tensor by
//   fused     evaluate(e, argus::fused, o): one loop nest, no (seq_q × seq_kv) buffer
//   unfused   evaluate(e, argus::unfused, o): scores, softmax, P·V each materialised
//   eigen     the Eigen peer (eigen_attention.hpp): per head Q_h·K_hᵀ, softmax, P·V
//   onednn    oneDNN (peers/onednn_attention.cpp): per head matmul, softmax, matmul primitives
//   torch     libtorch (peers/torch_attention.cpp): at::_scaled_dot_product_attention
// (onednn and torch where the program is built with them, in BM_core, BM_core_causal,
// BM_core_window and BM_core_bias, each checked once against fused: attention_support.hpp,
// peer_loop; the masks as each library's user writes them: is_causal, or a 0 / -inf matrix
// for the window and for oneDNN's causal mask).
// Rows (names read BM_core/<evaluator>/n:1024/h:8/threads:1):
//   BM_core          n = seq_q = seq_kv in 128 ... 8192, h 8, d_k 64
//   BM_core_causal   causal mask, n 1024 and 4096
//   BM_core_window   sliding_window(512): each query attends the last 512 keys, n 4096, 8192;
//                    no eigen row (the Eigen peer has no sliding window)
//   BM_core_gqa      grouped-query: 8 query heads over kv_h 2 key/value heads
//   BM_core_cross    n_q 256 queries against n_kv 4096 keys
//   BM_core_decode   one query against n_kv keys (1024, 4096, 8192)
//   BM_core_heads    h 1 ... 16 heads at d_model 512 (d_k = 512 / h), n 1024
//   BM_core_documents        packed documents of 256 positions, a mask kind of one's own
//                            (documents, below: the loop nest calls it on each tile), n 1024,
//                            4096; fused and unfused
//   BM_core_documents_dense  the same pairs as ignore_where of a (seq, seq) bool tensor
//   BM_core_documents_blocks the kind with ignores_block: the loop nest skips the tiles it
//                            ignores whole
//   BM_core_padded   a padded batch: 4 sequences of n, 3n/4, n/2, n/4 positions padded to n
//                    (ignore_keys), n 1024, 4096; fused and unfused
//   BM_core_bias     add_to_scores of a (seq, seq) float tensor, a relative-position bias
//                    (PyTorch's float attn_mask), n 1024, 4096; fused and unfused, and the
//                    peers with the same mask (their attn_mask, a binary_add post-op)
//   BM_peak_fma      the FMA peak that peak_pct divides by
// each at threads 1 and 2. Counters: attention_support.hpp; flops 4·B·h·n_q·n_kv·d_k
// (halved for causal; for a window, 4·B·h·d_k times the pairs inside it).
// smoke-filter: BM_core/(fused|unfused|eigen|onednn|torch)/n:128/h:8/threads:1/
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

/// The same values in q, k and v in every row (seeds 1, 2, 3; uniform in [-1, 1]).
template <class Q, class K, class V>
void fill_operands(Q& q, K& k, V& v) {
  argus::bench::fill_random(q.data(), q.size(), 1, 1.0f);
  argus::bench::fill_random(k.data(), k.size(), 2, 1.0f);
  argus::bench::fill_random(v.data(), v.size(), 3, 1.0f);
}

/// Times the library peer ev (onednn or torch) on problem p, after checking it against
/// `reference` (argus's fused output; attention_support.hpp, peer_loop).
template <class R>
void time_peer_core(benchmark::State& state, evaluator ev, int threads, double flops,
                    const argus::bench::peers::core_problem& p, R reference) {
  namespace peers = argus::bench::peers;
  argus::bench::peer_loop(
      state, threads, flops,
      ev == evaluator::onednn ? peers::onednn_core(p, threads) : peers::torch_core(p, threads),
      std::move(reference));
}

/// One row: H query heads over G key/value heads of width DK; Causal: the causal mask, with a
/// sliding window of Window keys where Window is not 0.
template <std::size_t H, std::size_t G, std::size_t DK, bool Causal, std::size_t Window = 0>
void core_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  const std::size_t sq = a.seq_q(state), skv = a.seq_kv(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>> q(1, sq);   // (B,H,SEQ_Q,D_K)
  tensor<float, shape<batch<>, head<G>, seq<>, head_dim<DK>>> k(1, skv);  // (B,G,SEQ_KV,D_K)
  tensor<float, shape<batch<>, head<G>, seq<>, head_dim<DK>>> v(1, skv);  // (B,G,SEQ_KV,D_K)
  tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>> o(1, sq);   // (B,H,SEQ_Q,D_K)
  fill_operands(q, k, v);
  const auto e = [&] {
    if constexpr (Window != 0)
      return attend(softmax(mask(scores(q, k), sliding_window(Window))), v);
    else if constexpr (Causal)
      return attend(softmax(mask(scores(q, k), causal)), v);
    else
      return attend(softmax(scores(q, k)), v);
  }();
  double flops = bench::core_flops(1, H, sq, skv, DK, DK, Causal);
  if constexpr (Window != 0) {  // the pairs inside the window: query i sees min(i + 1, Window)
    double pairs = 0;
    for (std::size_t i = 0; i < sq; ++i) pairs += double(std::min({i + 1, Window, skv}));
    flops = bench::core_flops(1, H, sq, skv, DK, DK, false) * pairs / (double(sq) * double(skv));
  }
  const peer::core_dims dims{1, H, G, sq, skv, DK, DK};
  const auto eigen_call = [&] {
    peer::core(dims, {q.data(), H * sq * DK, sq * DK, DK}, {k.data(), G * skv * DK, skv * DK, DK},
               {v.data(), G * skv * DK, skv * DK, DK}, {o.data(), H * sq * DK, sq * DK, DK},
               1.0f / std::sqrt(float(DK)), Causal, threads);
  };
  switch (ev) {
    case evaluator::fused:
      bench::timed_loop(state, threads, flops,
                        double(explain(e, fused).materialised_bytes_into_out()),
                        [&] { evaluate(e, fused, o); });
      break;
    case evaluator::unfused:
      bench::timed_loop(state, threads, flops,
                        double(explain(e, unfused).materialised_bytes_into_out()),
                        [&] { evaluate(e, unfused, o); });
      break;
    case evaluator::eigen:
      if constexpr (Window != 0) {
        state.SkipWithError("the Eigen peer has no sliding window");
        return;
      } else {
        bench::timed_loop(state, threads, flops, double(peer::core_bytes(dims, threads)),
                          eigen_call);
      }
      break;
    case evaluator::onednn:
    case evaluator::torch:
      if constexpr (G != H) {
        state.SkipWithError("the library peers run self-attention with h = kv_h only");
      } else {
        bench::peers::core_problem p{1, H, sq, skv, DK, q.data(), k.data(), v.data(), o.data()};
        std::vector<float> window;    // (SEQ_Q,SEQ_KV): 0 inside the window, -inf outside
        if constexpr (Window != 0) {  // as a PyTorch user passes it: a float attn_mask
          window = bench::peers::band_mask(sq, skv, Window);
          p.additive = window.data();
        } else {
          p.causal = Causal;
        }
        time_peer_core(state, ev, threads, flops, p, evaluate(e, fused));
      }
      return;
  }
  if (bench::checking()) {
    const auto reference = ev == evaluator::fused ? evaluate(e, unfused) : evaluate(e, fused);
    bench::check_close(state, o.data(), reference.data(), o.size());
  }
}

/// Packed sequences: query i attends key j only within its own document, document[p] the
/// document of position p (a mask kind of one's own: argus::Mask).
struct documents {
  using mask_effect = argus::ignores_pairs;
  const std::vector<int>* document;
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return (*document)[i] != (*document)[j];
  }
  std::string name() const { return "documents"; }
};
/// documents, saying which blocks of pairs it ignores whole (the documents are in order).
struct document_blocks : documents {
  bool ignores_block(std::size_t, std::size_t, std::size_t i0, std::size_t i1, std::size_t j0,
                     std::size_t j1) const {
    return (*document)[i1 - 1] < (*document)[j0] || (*document)[j1 - 1] < (*document)[i0];
  }
};
enum class document_form { kind, dense, blocks };

/// Times e under ev (fused or unfused) into o, and checks o against the other evaluator.
template <class E, class O>
void time_ours(benchmark::State& state, evaluator ev, int threads, double flops, const E& e, O& o) {
  using argus::evaluate, argus::explain, argus::fused, argus::unfused;
  if (ev == evaluator::fused)
    argus::bench::timed_loop(state, threads, flops,
                             double(explain(e, fused).materialised_bytes_into_out()),
                             [&] { evaluate(e, fused, o); });
  else
    argus::bench::timed_loop(state, threads, flops,
                             double(explain(e, unfused).materialised_bytes_into_out()),
                             [&] { evaluate(e, unfused, o); });
  if (argus::bench::checking()) {
    const auto reference = ev == evaluator::fused ? evaluate(e, unfused) : evaluate(e, fused);
    argus::bench::check_close(state, o.data(), reference.data(), o.size());
  }
}

/// One row of h 8, d_k 64 with documents of 256 positions: the kind itself, the same pairs as
/// ignore_where of a bool tensor, or the kind with ignores_block. Counted as every pair's
/// flops, whatever the loop nest skips (so GFLOP/s compare times).
template <document_form Form>
void documents_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t H = 8, DK = 64, length = 256;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>> q(1, n), k(1, n), v(1, n), o(1, n);
  fill_operands(q, k, v);
  std::vector<int> document(n);
  for (std::size_t i = 0; i < n; ++i) document[i] = static_cast<int>(i / length);
  tensor<bool, shape<seq<>, seq<>>> pairs(n, n);  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) pairs(i, j) = document[i] != document[j];
  const auto e = [&] {
    if constexpr (Form == document_form::dense)
      return attend(softmax(mask(scores(q, k), ignore_where(pairs))), v);
    else if constexpr (Form == document_form::blocks)
      return attend(softmax(mask(scores(q, k), document_blocks{{&document}})), v);
    else
      return attend(softmax(mask(scores(q, k), documents{&document})), v);
  }();
  const double flops = bench::core_flops(1, H, n, n, DK, DK, false);
  time_ours(state, ev, threads, flops, e, o);
}

/// One row of h 8, d_k 64: a padded batch of 4 sequences of n, 3n/4, n/2 and n/4 positions
/// (ignore_keys: the rest of each row padding). Counted as every pair's flops, whatever the
/// loop nest skips (the tiles of padding only), so that GFLOP/s compare times.
void padded_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t B = 4, H = 8, DK = 64;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>> q(B, n), k(B, n), v(B, n), o(B, n);
  fill_operands(q, k, v);
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(B, n);  // (B,SEQ_KV)
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = 0; j < n; ++j) padding(b, j) = j >= n * (B - b) / B ? 1 : 0;
  const auto e = attend(softmax(mask(scores(q, k), ignore_keys(padding))), v);
  const double flops = bench::core_flops(B, H, n, n, DK, DK, false);
  time_ours(state, ev, threads, flops, e, o);
}

/// One row of h 8, d_k 64 with an additive (seq, seq) float mask: a relative-position bias,
/// -|i - j| / 64 (an ALiBi slope's shape, shared by the heads), finite everywhere, so every
/// pair is computed.
void bias_row(benchmark::State& state, evaluator ev, const row_args& a) {
  using namespace argus;
  constexpr std::size_t H = 8, DK = 64;
  const std::size_t n = a.seq_q(state);
  const int threads = a.thread_count(state);
  bench::start_row(threads);
  tensor<float, shape<batch<>, head<H>, seq<>, head_dim<DK>>> q(1, n), k(1, n), v(1, n), o(1, n);
  fill_operands(q, k, v);
  tensor<float, shape<seq<>, seq<>>> bias(n, n);  // (SEQ_Q,SEQ_KV)
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      bias(i, j) = -static_cast<float>(i > j ? i - j : j - i) / 64.0f;
  const auto e = attend(softmax(mask(scores(q, k), add_to_scores(bias))), v);
  const double flops = bench::core_flops(1, H, n, n, DK, DK, false);
  if (ev == evaluator::onednn || ev == evaluator::torch) {
    bench::peers::core_problem p{1, H, n, n, DK, q.data(), k.data(), v.data(), o.data()};
    p.additive = bias.data();
    time_peer_core(state, ev, threads, flops, p, evaluate(e, fused));
    return;
  }
  time_ours(state, ev, threads, flops, e, o);
}

std::vector<std::vector<std::int64_t>> cross_product(const std::vector<std::int64_t>& ns,
                                                     std::int64_t h,
                                                     std::vector<std::int64_t> extra = {}) {
  std::vector<std::vector<std::int64_t>> rows;
  for (std::int64_t threads : {1, 2})
    for (std::int64_t n : ns) {
      std::vector<std::int64_t> r{n, h};
      r.insert(r.end(), extra.begin(), extra.end());
      r.push_back(threads);
      rows.push_back(r);
    }
  return rows;
}

const bool registered = [] {
  using argus::bench::add_rows;
  argus::bench::add_peak_rows();
  argus::bench::add_peer_context();
  const std::vector<evaluator> ours{evaluator::fused, evaluator::unfused};
  add_rows("BM_core", core_row<8, 8, 64, false>, {"n", "h", "threads"},
           cross_product({128, 256, 512, 1024, 2048, 4096, 8192}, 8));
  add_rows("BM_core_causal", core_row<8, 8, 64, true>, {"n", "h", "threads"},
           cross_product({1024, 4096}, 8));
  // No Eigen row: the Eigen peer has no sliding window (a row that reported so was counted as
  // failed by bench/run.py, and the full `make bench` ended with an error).
  add_rows("BM_core_window", core_row<8, 8, 64, true, 512>, {"n", "h", "threads"},
           cross_product({4096, 8192}, 8), ours);
  add_rows("BM_core_gqa", core_row<8, 2, 64, false>, {"n", "h", "kv_h", "threads"},
           cross_product({1024, 4096}, 8, {2}));
  add_rows("BM_core_cross", core_row<8, 8, 64, false>, {"n_q", "n_kv", "h", "threads"},
           {{256, 4096, 8, 1}, {256, 4096, 8, 2}});
  add_rows("BM_core_decode", core_row<8, 8, 64, false>, {"n_kv", "h", "threads"},
           cross_product({1024, 4096, 8192}, 8));
  // d_model 512 shared by h heads: d_k = 512 / h.
  const std::vector<std::string> heads_names{"n", "h", "d_k", "threads"};
  add_rows("BM_core_heads", core_row<1, 1, 512, false>, heads_names,
           cross_product({1024}, 1, {512}));
  add_rows("BM_core_heads", core_row<2, 2, 256, false>, heads_names,
           cross_product({1024}, 2, {256}));
  add_rows("BM_core_heads", core_row<4, 4, 128, false>, heads_names,
           cross_product({1024}, 4, {128}));
  add_rows("BM_core_heads", core_row<8, 8, 64, false>, heads_names, cross_product({1024}, 8, {64}));
  add_rows("BM_core_heads", core_row<16, 16, 32, false>, heads_names,
           cross_product({1024}, 16, {32}));
  add_rows("BM_core_documents", documents_row<document_form::kind>, {"n", "h", "threads"},
           cross_product({1024, 4096}, 8), ours);
  add_rows("BM_core_documents_dense", documents_row<document_form::dense>, {"n", "h", "threads"},
           cross_product({1024, 4096}, 8), ours);
  add_rows("BM_core_documents_blocks", documents_row<document_form::blocks>, {"n", "h", "threads"},
           cross_product({1024, 4096}, 8), ours);
  add_rows("BM_core_padded", padded_row, {"n", "h", "threads"}, cross_product({1024, 4096}, 8),
           ours);
  add_rows("BM_core_bias", bias_row, {"n", "h", "threads"}, cross_product({1024, 4096}, 8), ours);
  // The library peers last: libtorch, once loaded, stays resident (peers/peers.hpp).
  add_rows("BM_core", core_row<8, 8, 64, false>, {"n", "h", "threads"},
           cross_product({128, 256, 512, 1024, 2048, 4096, 8192}, 8),
           argus::bench::peer_evaluators());
  add_rows("BM_core_bias", bias_row, {"n", "h", "threads"}, cross_product({1024, 4096}, 8),
           argus::bench::peer_evaluators());
  add_rows("BM_core_causal", core_row<8, 8, 64, true>, {"n", "h", "threads"},
           cross_product({1024, 4096}, 8), argus::bench::peer_evaluators());
  add_rows("BM_core_window", core_row<8, 8, 64, true, 512>, {"n", "h", "threads"},
           cross_product({4096, 8192}, 8), argus::bench::peer_evaluators());
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
