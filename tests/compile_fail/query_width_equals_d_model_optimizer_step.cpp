// opt.step(m, g) after a rejected forward_for_training: the relation of m.forward(x) is the
// only error. backward and step take the rejected result silently (step gave a second error,
// "no matching function for call to step(mha&, argus::detail::rejected&)").
// expect: query_width_equals_d_model
// expect-gcc: QueryWidth = 32|DModel = 64
// expect-clang: 32UL == 64UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<Width>>>;

void train(mha& m, const activation<64>& x, const activation<32>& narrow) {
  argus::sgd<mha> opt{.momentum = 0.9f};
  argus::adam<mha> adam;
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  const auto g = argus::backward(tape, x, argus::fused);
  opt.step(m, g), adam.step(m, g);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto bad = argus::forward_for_training(m, argus::fused, narrow);
  auto bad_g = argus::backward(bad, x, argus::fused);
  opt.step(m, bad_g);   // no second error
  adam.step(m, bad_g);  // nor a third
#else
  (void)narrow;
#endif
}
