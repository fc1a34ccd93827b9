// backward(tape, dout, policy) takes what forward_for_training returned (before, an
// expression there gave "no matching function" and the candidates' constraints).
// expect: argument_is_a_training_tape
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void train(const mha& m, const activation<32>& x, const activation<32>& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(m.forward(x), dout, argus::fused);  // an expression, not a tape
#endif
}

int main() { return 0; }
