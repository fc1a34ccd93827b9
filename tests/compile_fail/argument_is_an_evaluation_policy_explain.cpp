// explain(e, policy) takes argus::fused or argus::unfused as the policy, as evaluate does.
// expect: argument_is_an_evaluation_policy: argus::explain
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void plan(const activation& x) {
  (void)argus::explain(argus::split_heads<4>(x), argus::unfused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::explain(argus::split_heads<4>(x), 1);  // a number, not a policy
#endif
}

int main() { return 0; }
