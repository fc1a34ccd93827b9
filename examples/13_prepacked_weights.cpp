// 13_prepacked_weights -- inference on weights packed once: argus::prepack(module).
//   - every projection x·W copies W into the panels its matrix product reads; a module served
//     call after call can pack its four weights once instead;
//   - the packed module's forward takes what the module's takes and gives the same result, to
//     the bit, for inputs of any length;
//   - explain() shows the packed weights being read in place;
//   - the packed module is a copy: after the module changes (a training step), pack it again.
//
// It prints what it checks and exits non-zero if a check fails.
// docs/how-to/serve_with_prepacked_weights.md quotes it.
#include <argus/argus.hpp>

#include <cstddef>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

template <class T, argus::Shape S>
bool same_bits(const argus::tensor<T, S>& a, const argus::tensor<T, S>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a.data()[i] == b.data()[i])) return false;
  return a.size() == b.size();
}

template <class Tensor>
void randomize(Tensor& t, float scale, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0F, scale);
  for (auto& v : t) v = d(g);
}

}  // namespace

int main() {
  using namespace argus;
  using gpt2_small = multi_head_attention<768, 12>;  // d_k 64, biases on
  gpt2_small mha;                                    // trained or loaded, say
  randomize(mha.w_q, 0.036F, 1), randomize(mha.w_k, 0.036F, 2), randomize(mha.w_v, 0.036F, 3);
  randomize(mha.w_o, 0.036F, 4), randomize(mha.b_q, 0.1F, 5), randomize(mha.b_o, 0.1F, 6);

  // Pack once, serve many calls.
  const prepacked_attention<gpt2_small> served = prepack(mha);
  std::printf("prepack(mha): %zu KiB (W_q, W_k, W_v, W_o as elements and as panels, biases)\n",
              served.bytes() / 1024);

  using activation = tensor<float, shape<batch<>, seq<>, model<768>>>;
  std::printf("requests of 1, 7, 64 and 300 tokens, causal:\n");
  bool all_same = true;
  for (std::size_t tokens : {1u, 7u, 64u, 300u}) {
    activation x(1, tokens);  // (B,SEQ,D_MODEL)
    randomize(x, 1.0F, unsigned(tokens));
    const activation plain = evaluate(mha.forward(x, causal), fused);
    const activation packed = evaluate(served.forward(x, causal), fused);
    all_same = all_same && same_bits(plain, packed);
  }
  check(all_same, "served.forward(x, causal) == mha.forward(x, causal), to the bit");

  activation x(1, 16);
  randomize(x, 1.0F, 7);
  std::ostringstream plan;
  plan << explain(served.forward(x), fused);
  std::istringstream lines(plan.str());
  std::size_t packed_lines = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find("packed panels read in place") != std::string::npos && packed_lines++ == 0)
      std::printf("explain(served.forward(x), fused), the first of the four projections:\n%s\n",
                  line.c_str());
  check(packed_lines == 4, "explain() shows the four projections reading packed weights");

  // A training step changes mha; served keeps the weights it packed.
  const activation before = evaluate(mha.forward(x), fused);
  for (auto& w : mha.w_o) w *= 0.5F;
  check(same_bits(evaluate(served.forward(x), fused), before),
        "served is a copy: changing mha does not change it");
  const auto repacked = prepack(mha);
  check(same_bits(evaluate(repacked.forward(x), fused), evaluate(mha.forward(x), fused)),
        "prepack(mha) again follows the change");
  return failures == 0 ? 0 : 1;
}
