// evaluate(e, policy): the policy is argus::fused or argus::unfused.
// expect: argument_is_an_evaluation_policy
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void build(const mha& m, const activation& x) {
  (void)argus::evaluate(m.forward(x), argus::unfused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::evaluate(m.forward(x), true);  // a flag instead of a policy
#endif
}

int main() { return 0; }
