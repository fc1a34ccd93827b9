// A misuse's result passed on, as the output of evaluate(e, p, out) and as backward()'s dout,
// adds no second error (before, each of these reported the rejected value again).
// expect: query_width_equals_d_model
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void train(const mha& m, const activation<32>& x, const activation<24>& narrow) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  auto wrong = argus::evaluate(m.forward(narrow), argus::fused);  // 24 wide, d_model 32
#else
  (void)narrow;
  auto wrong = argus::evaluate(m.forward(x), argus::fused);
#endif
  argus::evaluate(m.forward(x), argus::unfused, wrong);
  (void)argus::backward(tape, wrong, argus::fused);
}

int main() { return 0; }
