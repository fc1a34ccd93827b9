// evaluate(e, policy): the policy is not optional (before: "no matching function").
// expect: argument_is_an_evaluation_policy
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void serve(const mha& m, const activation<32>& x) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::evaluate(m.forward(x));
#else
  (void)argus::evaluate(m.forward(x), argus::fused);
#endif
}

int main() { return 0; }
