// bench/compile/mha_eigen.cpp -- compile-time benchmark: the full MHA, the Eigen peer.
//
// The program of mha_fused.cpp written with Eigen 3.4 (bench/eigen_attention.hpp, the peer
// that bench/attention_*.cpp compare with): a d_model 512, 8-head self-attention with random
// weights on a (n, 512) input, n from the command line (default 256); prints a checksum.
// GCC 12: a false -W(maybe-)uninitialized inside <immintrin.h> for Eigen's AVX-512 kernels
// (as in bench/kernel_gemm.cpp); it must precede the includes.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "../eigen_attention.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  namespace peer = argus::bench::eigen_peer;
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  peer::mha_weights w(512, 8, 8, 64, 64, 512, 512);
  for (auto* m : {&w.w_q, &w.w_k, &w.w_v, &w.w_o}) m->setZero();
  for (auto* m : {&w.w_q, &w.w_k, &w.w_v, &w.w_o})
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = u(g);
  for (auto* b : {&w.b_q, &w.b_k, &w.b_v, &w.b_o}) b->setZero();
  std::vector<float> x(n * 512), y(n * 512);  // (SEQ,D_MODEL)
  for (float& v : x) v = 20 * u(g);
  peer::forward(w, 1, n, n, x.data(), x.data(), x.data(), y.data(), false, 1);
  double sum = 0;
  for (float v : y) sum += v;
  std::printf("checksum %.6f\n", sum);
}
