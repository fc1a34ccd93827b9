// forward_for_training(m, policy, x): the relations of m.forward(x), reported by it as the only
// error (it was at line 17 of GCC's output, after std::apply's frames, then two more errors).
// expect: query_width_equals_d_model
// expect-gcc: QueryWidth = 32|DModel = 64
// expect-clang: 32UL == 64UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<Width>>>;

void train(const mha& m, const activation<64>& x, const activation<32>& narrow) {
  auto tape = argus::forward_for_training(m, argus::fused, x, argus::dropout{0.1, 7});
  (void)tape;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  auto bad = argus::forward_for_training(m, argus::fused, narrow, argus::causal);
  (void)argus::backward(bad, x, argus::fused);  // no second error
#else
  (void)narrow;
#endif
}
