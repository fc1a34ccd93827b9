// prepack(m).forward(x): the expression would hold packed weights gone at the end of the
// statement (before, this compiled).
// expect: module_is_not_a_temporary
#include <argus/argus.hpp>
#include <argus/eval/prepacked.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void serve(const mha& m, const activation& x) {
  const auto served = argus::prepack(m);
  (void)argus::evaluate(served.forward(x), argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto dangling = argus::prepack(m).forward(x);
  (void)argus::evaluate(dangling, argus::fused);
#endif
}

int main() { return 0; }
