// opt.step(m, g) updates m in place: m is a module of the optimiser's own Module type. An
// sgd<mha8> given a 4-head module says so, not "no matching function".
// expect: module_is_the_optimizers_module
// expect-gcc: multi_head_attention<64, 4
// expect-clang: multi_head_attention<64, 4
#include <argus/argus.hpp>

using mha4 = argus::multi_head_attention<64, 4>;
using mha8 = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;

void train(mha4& m4, mha8& m8, const activation& x, const activation& dout) {
  const auto tape = argus::forward_for_training(m8, argus::fused, x);
  const auto g = argus::backward(tape, dout, argus::fused);
  argus::sgd<mha8> opt;
  opt.step(m8, g);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  opt.step(m4, g);  // a 4-head module, for an 8-head optimiser
#else
  (void)m4;
#endif
}
