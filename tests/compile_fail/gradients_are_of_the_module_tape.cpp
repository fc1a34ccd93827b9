// opt.step(m, g) takes the gradients backward() returned, not the tape (before, the tape's
// module_type passed the rule and the step failed with a dozen errors about missing members).
// expect: gradients_are_of_the_module
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void train(mha& m, const activation<32>& x, const activation<32>& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  argus::adam<mha> opt;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  opt.step(m, tape);
  (void)dout;
#else
  opt.step(m, argus::backward(tape, dout, argus::fused));
#endif
}

int main() { return 0; }
