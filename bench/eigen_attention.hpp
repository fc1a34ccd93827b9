// bench/eigen_attention.hpp -- benchmark support: the Eigen 3.4 peer of argus's attention.
//
// Multi-head attention written with Eigen the way a careful user would: row-major float
// matrices and maps, matrix products for the projections (x·W + b, the paper's x-times-W
// convention, as argus's module), per head S = scale · Q_h·K_hᵀ with noalias, a stable
// softmax row by row (max, exp, sum, scale), O_h = P·V_h, the heads written side by side
// (the concat), and the output projection. It reuses one (seq_q × seq_kv) score matrix per
// thread for all the heads that thread takes, so it never holds the scores of every head
// at once (argus's unfused evaluator does).
//
// Threads: Eigen parallelises its products only when built with OpenMP, and bench/ is not
// (no -fopenmp), so Eigen::setNbThreads(n) would change nothing. The peer therefore splits
// the work itself over std::threads -- (batch, head) pairs for the attention, row blocks for
// the projections -- and keeps Eigen's own products on one thread each (setNbThreads(1)).
// Threads are started per parallel region (about 20-50 µs each; the smallest rows see it).
//
// Used by bench/attention_core.cpp, bench/attention_mha.cpp and bench/compile/mha_eigen.cpp;
// it depends on Eigen and the standard library only.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <limits>
#include <thread>
#include <vector>

namespace argus::bench::eigen_peer {

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using strided_map = Eigen::Map<row_matrix, 0, Eigen::OuterStride<>>;
using const_strided_map = Eigen::Map<const row_matrix, 0, Eigen::OuterStride<>>;
using const_map = Eigen::Map<const row_matrix>;

/// Calls f(task, thread) for task in [0, tasks) on `threads` std::threads (the caller is
/// thread 0); tasks are handed out one at a time.
template <class F>
void parallel_tasks(std::size_t tasks, int threads, F&& f) {
  const std::size_t n = std::min<std::size_t>(std::size_t(std::max(threads, 1)), tasks);
  if (n <= 1) {
    for (std::size_t t = 0; t < tasks; ++t) f(t, std::size_t(0));
    return;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&](std::size_t thread) {
    for (std::size_t t; (t = next.fetch_add(1)) < tasks;) f(t, thread);
  };
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < n; ++i) pool.emplace_back(work, i);
  work(0);
  for (auto& th : pool) th.join();
}

/// A strided 4-d operand: element [b][h][i][c] at data + b*batch + h*head + i*row + c.
struct strided4 {
  const float* data;
  std::size_t batch, head, row;
};
struct strided4_out {
  float* data;
  std::size_t batch, head, row;
};

/// Extents of one attention call (the same fields as argus::kernel::attention_problem).
struct core_dims {
  std::size_t batch, heads, kv_heads, seq_q, seq_kv, d_k, d_v;
};

/// In place: each row of s becomes softmax(row), the stable way (subtract the row maximum).
/// With `causal`, entries j > i of row i are excluded first (top-left aligned).
inline void softmax_rows(row_matrix& s, bool causal) {
  const Eigen::Index cols = s.cols();
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    auto r = s.row(i);
    if (causal && i + 1 < cols)
      r.tail(cols - i - 1).setConstant(-std::numeric_limits<float>::infinity());
    const float m = r.maxCoeff();
    r = (r.array() - m).exp().matrix();
    r *= 1.0f / r.sum();
  }
}

/// Bytes core() allocates: one (seq_q × seq_kv) score matrix per thread.
inline std::size_t core_bytes(const core_dims& d, int threads) {
  const std::size_t used =
      std::min<std::size_t>(std::size_t(std::max(threads, 1)), d.batch * d.heads);
  return used * d.seq_q * d.seq_kv * sizeof(float);
}

/// O = softmax(scale · Q·Kᵀ [causal]) · V for every (batch, head); query head h reads key and
/// value head h / (heads / kv_heads).
inline void core(const core_dims& d, strided4 q, strided4 k, strided4 v, strided4_out o,
                 float scale, bool causal, int threads) {
  const std::size_t used =
      std::min<std::size_t>(std::size_t(std::max(threads, 1)), d.batch * d.heads);
  std::vector<row_matrix> scores(used);  // one per thread, reused over its heads
  for (auto& s : scores) s.resize(Eigen::Index(d.seq_q), Eigen::Index(d.seq_kv));
  const std::size_t group = d.heads / d.kv_heads;
  const auto sq = Eigen::Index(d.seq_q), skv = Eigen::Index(d.seq_kv);
  parallel_tasks(d.batch * d.heads, threads, [&](std::size_t t, std::size_t thread) {
    const std::size_t b = t / d.heads, h = t % d.heads, g = h / group;
    const_strided_map qh(q.data + b * q.batch + h * q.head, sq, Eigen::Index(d.d_k),
                         Eigen::OuterStride<>(Eigen::Index(q.row)));
    const_strided_map kh(k.data + b * k.batch + g * k.head, skv, Eigen::Index(d.d_k),
                         Eigen::OuterStride<>(Eigen::Index(k.row)));
    const_strided_map vh(v.data + b * v.batch + g * v.head, skv, Eigen::Index(d.d_v),
                         Eigen::OuterStride<>(Eigen::Index(v.row)));
    strided_map oh(o.data + b * o.batch + h * o.head, sq, Eigen::Index(d.d_v),
                   Eigen::OuterStride<>(Eigen::Index(o.row)));
    row_matrix& s = scores[thread];
    s.noalias() = scale * (qh * kh.transpose());
    softmax_rows(s, causal);
    oh.noalias() = s * vh;
  });
}

/// The module's weights, x-times-W: w_q (d_model, h·d_k), w_k (kdim, g·d_k), w_v (vdim, g·d_v),
/// w_o (h·d_v, d_model), and the four biases.
struct mha_weights {
  std::size_t d_model, heads, kv_heads, d_k, d_v, kdim, vdim;
  row_matrix w_q, w_k, w_v, w_o;
  Eigen::RowVectorXf b_q, b_k, b_v, b_o;

  mha_weights(std::size_t d_model_, std::size_t heads_, std::size_t kv_heads_, std::size_t d_k_,
              std::size_t d_v_, std::size_t kdim_, std::size_t vdim_)
      : d_model(d_model_),
        heads(heads_),
        kv_heads(kv_heads_),
        d_k(d_k_),
        d_v(d_v_),
        kdim(kdim_),
        vdim(vdim_),
        w_q(Eigen::Index(d_model), Eigen::Index(heads * d_k)),
        w_k(Eigen::Index(kdim), Eigen::Index(kv_heads * d_k)),
        w_v(Eigen::Index(vdim), Eigen::Index(kv_heads * d_v)),
        w_o(Eigen::Index(heads * d_v), Eigen::Index(d_model)),
        b_q(Eigen::Index(heads * d_k)),
        b_k(Eigen::Index(kv_heads * d_k)),
        b_v(Eigen::Index(kv_heads * d_v)),
        b_o(Eigen::Index(d_model)) {}
};

/// out = x·W + b, rows split over threads in equal blocks.
template <class X, class Out>
void project(const X& x, const row_matrix& w, const Eigen::RowVectorXf& b, Out& out, int threads) {
  const std::size_t rows = std::size_t(x.rows());
  const std::size_t blocks =
      std::min<std::size_t>(std::size_t(std::max(threads, 1)), std::max<std::size_t>(rows / 16, 1));
  parallel_tasks(blocks, threads, [&](std::size_t t, std::size_t) {
    const auto r0 = Eigen::Index(rows * t / blocks), r1 = Eigen::Index(rows * (t + 1) / blocks);
    auto o = out.middleRows(r0, r1 - r0);
    o.noalias() = x.middleRows(r0, r1 - r0) * w;
    o.rowwise() += b;
  });
}

/// Bytes forward() allocates: Q, K, V, the concatenated heads and the score matrices.
inline std::size_t mha_bytes(const mha_weights& w, std::size_t batch, std::size_t seq_q,
                             std::size_t seq_kv, int threads) {
  const std::size_t qkv = batch * (seq_q * w.heads * w.d_k + seq_kv * w.kv_heads * (w.d_k + w.d_v));
  const std::size_t concat = batch * seq_q * w.heads * w.d_v;
  return (qkv + concat) * sizeof(float) +
         core_bytes({batch, w.heads, w.kv_heads, seq_q, seq_kv, w.d_k, w.d_v}, threads);
}

/// out (batch·seq_q, d_model) = MHA(x_q (batch·seq_q, d_model), x_k (batch·seq_kv, kdim),
/// x_v (batch·seq_kv, vdim)), all row-major.
inline void forward(const mha_weights& w, std::size_t batch, std::size_t seq_q, std::size_t seq_kv,
                    const float* x_q, const float* x_k, const float* x_v, float* out, bool causal,
                    int threads) {
  const auto rq = Eigen::Index(batch * seq_q), rkv = Eigen::Index(batch * seq_kv);
  const_map xq(x_q, rq, Eigen::Index(w.d_model));
  const_map xk(x_k, rkv, Eigen::Index(w.kdim));
  const_map xv(x_v, rkv, Eigen::Index(w.vdim));
  row_matrix q(rq, Eigen::Index(w.heads * w.d_k));      // (B*SEQ_Q,H*D_K)
  row_matrix k(rkv, Eigen::Index(w.kv_heads * w.d_k));  // (B*SEQ_KV,G*D_K)
  row_matrix v(rkv, Eigen::Index(w.kv_heads * w.d_v));  // (B*SEQ_KV,G*D_V)
  row_matrix heads(rq, Eigen::Index(w.heads * w.d_v));  // (B*SEQ_Q,H*D_V): the concat
  project(xq, w.w_q, w.b_q, q, threads);
  project(xk, w.w_k, w.b_k, k, threads);
  project(xv, w.w_v, w.b_v, v, threads);
  // Head h of Q is columns [h·d_k, (h+1)·d_k) of q: a strided block, no split copy.
  const std::size_t hq = w.heads * w.d_k, hk = w.kv_heads * w.d_k, hv = w.kv_heads * w.d_v;
  const std::size_t ho = w.heads * w.d_v;
  core({batch, w.heads, w.kv_heads, seq_q, seq_kv, w.d_k, w.d_v}, {q.data(), seq_q * hq, w.d_k, hq},
       {k.data(), seq_kv * hk, w.d_k, hk}, {v.data(), seq_kv * hv, w.d_v, hv},
       {heads.data(), seq_q * ho, w.d_v, ho}, 1.0f / std::sqrt(float(w.d_k)), causal, threads);
  Eigen::Map<row_matrix> o(out, rq, Eigen::Index(w.d_model));
  project(heads, w.w_o, w.b_o, o, threads);
}

}  // namespace argus::bench::eigen_peer
