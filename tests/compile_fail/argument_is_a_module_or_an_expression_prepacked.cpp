// A prepacked_attention has a module's members, its weights packed for inference and read
// only: forward_for_training trains the module itself (before, the prepacked one was taken
// and backward() failed deep inside with a dozen errors about packed_weight's constructors).
// expect: argument_is_a_module_or_an_expression
// expect: train the module, then prepack it
#include <argus/argus.hpp>
#include <argus/eval/prepacked.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void train(const mha& m, const activation& x, const activation& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto served = argus::prepack(m);
  const auto packed_tape = argus::forward_for_training(served, argus::fused, x);
  (void)argus::backward(packed_tape, dout, argus::fused);
#endif
}

int main() { return 0; }
