// opt.step(m, g) updates m in place, so m is not const: adam<mha>::step given a const mha
// says so, not "no matching function".
// expect: module_is_the_optimizers_module
// expect-gcc: const argus::multi_head_attention<64, 8
// expect-clang: const argus::multi_head_attention<64, 8
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;

void train(mha& m, const mha& frozen, const activation& x, const activation& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  const auto g = argus::backward(tape, dout, argus::fused);
  argus::adam<mha> opt;
  opt.step(m, g);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  opt.step(frozen, g);  // a const module cannot be updated
#else
  (void)frozen;
#endif
}
