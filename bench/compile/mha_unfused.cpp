// bench/compile/mha_unfused.cpp -- compile-time benchmark: the full MHA, argus, unfused policy.
//
// One program in three spellings (mha_fused.cpp, mha_unfused.cpp, mha_eigen.cpp): a
// d_model 512, 8-head self-attention module with random weights applied to a (1, n, 512)
// input, n from the command line (default 256); prints a checksum. bench/compile/measure.py
// times how long each takes to compile. Not a Google Benchmark: bench/CMakeLists.txt globs
// bench/*.cpp only.
#include <argus/argus.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>

int main(int argc, char** argv) {
  using namespace argus;
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  multi_head_attention<512, 8> mha;
  for (auto* w : {&mha.w_q, &mha.w_k, &mha.w_v, &mha.w_o})
    for (float& v : *w) v = u(g);
  tensor<float, shape<batch<>, seq<>, model<512>>> x(1, n);  // (BATCH,SEQ,D_MODEL)
  for (float& v : x) v = 20 * u(g);
  const tensor<float, shape<batch<>, seq<>, model<512>>> y =  // (BATCH,SEQ,D_MODEL)
      evaluate(mha.forward(x), unfused);
  double sum = 0;
  for (float v : y) sum += v;
  std::printf("checksum %.6f\n", sum);
}
