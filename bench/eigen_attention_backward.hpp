// bench/eigen_attention_backward.hpp -- benchmark support: the Eigen 3.4 peer of argus's
// attention backward pass (the gradients dQ, dK, dV of the attention core).
//
// Written the way a careful Eigen user would, per (batch item, K/V head) on its own thread
// (the group's query heads in order, so dK and dV need no synchronisation), with two
// (seq_q × seq_kv) matrices per thread reused over its heads:
//     S = scale · Q Kᵀ, P = softmax(S) (eigen_peer::softmax_rows, causal optional)
//     dV += Pᵀ dO      dP = dO Vᵀ      D = rowsum(P ∘ dP)      dS = P ∘ (dP − D)
//     dQ = scale · dS K      dK += scale · dSᵀ Q
// every product a noalias() Eigen product. Threads as eigen_attention.hpp: Eigen's products
// on one thread each, the work split over std::threads.
#pragma once

#include "eigen_attention.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace argus::bench::eigen_peer {

/// Bytes backward() allocates: two (seq_q × seq_kv) matrices per thread.
inline std::size_t backward_bytes(const core_dims& d, int threads) {
  const std::size_t used =
      std::min<std::size_t>(std::size_t(std::max(threads, 1)), d.batch * d.kv_heads);
  return 2 * used * d.seq_q * d.seq_kv * sizeof(float);
}

/// dQ, dK, dV of O = softmax(scale · Q Kᵀ [causal]) V given dO (dO strided as O, dQ as Q,
/// dK as K, dV as V).
inline void backward(const core_dims& d, strided4 q, strided4 k, strided4 v, strided4 d_o,
                     strided4_out d_q, strided4_out d_k, strided4_out d_v, float scale, bool causal,
                     int threads) {
  const std::size_t used =
      std::min<std::size_t>(std::size_t(std::max(threads, 1)), d.batch * d.kv_heads);
  std::vector<row_matrix> p_of(used), dp_of(used);
  const auto sq = Eigen::Index(d.seq_q), skv = Eigen::Index(d.seq_kv);
  for (std::size_t t = 0; t < used; ++t) p_of[t].resize(sq, skv), dp_of[t].resize(sq, skv);
  const std::size_t group = d.heads / d.kv_heads;
  const auto dk = Eigen::Index(d.d_k), dv = Eigen::Index(d.d_v);
  parallel_tasks(d.batch * d.kv_heads, threads, [&](std::size_t t, std::size_t thread) {
    const std::size_t b = t / d.kv_heads, g = t % d.kv_heads;
    const_strided_map kg(k.data + b * k.batch + g * k.head, skv, dk,
                         Eigen::OuterStride<>(Eigen::Index(k.row)));
    const_strided_map vg(v.data + b * v.batch + g * v.head, skv, dv,
                         Eigen::OuterStride<>(Eigen::Index(v.row)));
    strided_map dkg(d_k.data + b * d_k.batch + g * d_k.head, skv, dk,
                    Eigen::OuterStride<>(Eigen::Index(d_k.row)));
    strided_map dvg(d_v.data + b * d_v.batch + g * d_v.head, skv, dv,
                    Eigen::OuterStride<>(Eigen::Index(d_v.row)));
    dkg.setZero();
    dvg.setZero();
    row_matrix& p = p_of[thread];
    row_matrix& dp = dp_of[thread];
    for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
      const_strided_map qh(q.data + b * q.batch + h * q.head, sq, dk,
                           Eigen::OuterStride<>(Eigen::Index(q.row)));
      const_strided_map doh(d_o.data + b * d_o.batch + h * d_o.head, sq, dv,
                            Eigen::OuterStride<>(Eigen::Index(d_o.row)));
      strided_map dqh(d_q.data + b * d_q.batch + h * d_q.head, sq, dk,
                      Eigen::OuterStride<>(Eigen::Index(d_q.row)));
      p.noalias() = scale * (qh * kg.transpose());
      softmax_rows(p, causal);
      dvg.noalias() += p.transpose() * doh;
      dp.noalias() = doh * vg.transpose();
      const Eigen::VectorXf rows = (p.array() * dp.array()).rowwise().sum();
      dp = (p.array() * (dp.array().colwise() - rows.array())).matrix();  // dS
      dqh.noalias() = scale * (dp * kg);
      dkg.noalias() += scale * (dp.transpose() * qh);
    }
  });
}

}  // namespace argus::bench::eigen_peer
