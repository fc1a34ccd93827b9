// forward_for_training(m, policy, ...) trains a multi_head_attention or an attention core
// expression (before, a number here matched no overload: the compilers listed both
// candidates' constraints and named no rule).
// expect: argument_is_a_module_or_an_expression
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void train(const mha& m, const activation& x) {
  (void)argus::forward_for_training(m, argus::fused, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const int not_a_module = 0;
  (void)argus::forward_for_training(not_a_module, argus::fused, x);
#endif
}

int main() { return 0; }
