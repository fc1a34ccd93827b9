// 00_demo -- the paper's configuration (d_model = 512, h = 8, d_k = d_v = 64) on a default
// input: the configuration, the output's shape and checksum, each head's attention weights
// for the first query, and the fused and unfused evaluators side by side (agreement and
// time). `make demo` builds and runs it.
//
// "SIMD" names the instruction set the kernels run: argus::kernel::active_isa(). Linked with
// a dispatching kernel library (argus_add_kernel_library(... DISPATCH)) that set is chosen at
// run time, and may differ from the one this file is compiled for (compiled_isa).
#include <argus/argus.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace {

using mha_t = argus::multi_head_attention<512, 8>;  // d_model 512, 8 heads, bias
template <std::size_t D>
using activations =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<D>>>;

/// Deterministic weights, uniform in ±1/sqrt(fan_in) as torch's default initialisation.
template <class Tensor>
void init_uniform(Tensor& t, std::size_t fan_in, std::mt19937& g) {
  const float a = 1.0f / std::sqrt(float(fan_in));
  std::uniform_real_distribution<float> u(-a, a);
  for (auto& v : t) v = u(g);
}

/// The instruction set the kernels run, and how it was chosen where a library chose it.
std::string kernel_isa() {
  namespace k = argus::kernel;
  const k::isa runs = k::active_isa();
  std::string s = k::isa_name(runs);
  if (k::isa_chosen_at_run_time) {
    s += " (chosen at run time";
    if (runs != k::compiled_isa)
      s += std::string("; this program is compiled for ") + k::isa_name(k::compiled_isa);
    s += ")";
  }
  return s;
}

template <class F>
double best_seconds(F&& f, int repeats) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main() {
  std::mt19937 g(2017);
  mha_t mha;
  init_uniform(mha.w_q, 512, g), init_uniform(mha.w_k, 512, g), init_uniform(mha.w_v, 512, g);
  init_uniform(mha.w_o, 512, g), init_uniform(mha.b_q, 512, g), init_uniform(mha.b_k, 512, g);
  init_uniform(mha.b_v, 512, g), init_uniform(mha.b_o, 512, g);

  std::printf("argus %d.%d.%d demo: multi-head attention, Vaswani et al. 2017 base configuration\n",
              argus::version_major, argus::version_minor, argus::version_patch);
  std::printf("  d_model %zu, heads %zu, d_k %zu, d_v %zu, bias %s, threads %zu, SIMD %s\n",
              mha_t::d_model, mha_t::heads, mha_t::d_k, mha_t::d_v, mha_t::has_bias ? "yes" : "no",
              argus::num_threads(), kernel_isa().c_str());

  // A short sentence of 12 tokens: x[t][j] = sin(t / 10000^(j/d)) style positional signal.
  const std::size_t n = 12;
  activations<512> x(1, n);  // (1,SEQ,D_MODEL)
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < 512; ++j) {
      const double angle = double(t) / std::pow(10000.0, double(j / 2 * 2) / 512.0);
      x(0, t, j) = float(j % 2 ? std::cos(angle) : std::sin(angle));
    }

  const auto y = mha.forward(x);  // self-attention, an expression: nothing computed yet
  const activations<512> out = argus::evaluate(y, argus::unfused);  // (1,SEQ,D_MODEL)
  double checksum = 0;
  for (float v : out) checksum += v;
  std::printf("\noutput shape (batch, seq, d_model) = (%zu, %zu, %zu), checksum (sum) %.6f\n",
              out.extent(0), out.extent(1), out.extent(2), checksum);

  const auto attn = argus::evaluate(argus::attention_weights(y), argus::unfused);  // (1,H,SEQ,SEQ)
  std::printf("\nattention weights of the first query (token 0) over the %zu keys, per head:\n", n);
  for (std::size_t h = 0; h < mha_t::heads; ++h) {
    std::printf("  head %zu:", h);
    for (std::size_t k = 0; k < n; ++k) std::printf(" %.3f", attn(0, h, 0, k));
    std::printf("\n");
  }

  // The same expression evaluated both ways on a longer input.
  const std::size_t long_n = 1024;
  activations<512> xl(1, long_n);  // (1,SEQ,D_MODEL)
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : xl) v = nd(g);
  const auto yl = mha.forward(xl, argus::causal);
  activations<512> a(1, long_n), b(1, long_n);
  const double tu = best_seconds([&] { argus::evaluate(yl, argus::unfused, a); }, 3);
  const double tf = best_seconds([&] { argus::evaluate(yl, argus::fused, b); }, 3);
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(a.data()[i] - b.data()[i])));
    max_abs = std::max(max_abs, double(std::abs(a.data()[i])));
  }
  std::printf(
      "\ncausal self-attention, n = %zu: fused vs unfused max |difference| %.2e (max |out| %.3f)\n",
      long_n, max_diff, max_abs);
  std::printf("  unfused %.2f ms, fused %.2f ms (best of 3): fused is %.2fx the speed of unfused\n",
              tu * 1e3, tf * 1e3, tu / tf);
  return max_diff <= 1e-4 * std::max(1.0, max_abs) ? 0 : 1;
}
