// opt.step(m, g): g = backward(...) of a tape of a module of m's type; the gradients of a
// 4-head module do not fit an 8-head one.
// expect: gradients_are_of_the_module
// expect-gcc: multi_head_attention<64, 4
// expect-clang: multi_head_attention<64, 4
#include <argus/argus.hpp>

using mha4 = argus::multi_head_attention<64, 4>;
using mha8 = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;

void train(mha4& m4, mha8& m8, const activation& x, const activation& dout) {
  const auto tape = argus::forward_for_training(m4, argus::fused, x);
  const auto g = argus::backward(tape, dout, argus::fused);
  argus::sgd<mha4> opt4;
  opt4.step(m4, g);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::sgd<mha8> opt8;
  opt8.step(m8, g);  // a 4-head module's gradients
#else
  (void)m8;
#endif
}
