// m.forward(x) gives an expression that holds m's weights by reference: on a temporary module
// (before, this compiled, and evaluating y read the weights of a module already gone).
// expect: module_is_not_a_temporary
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void serve(const mha& m, const activation<32>& x) {
  const auto y = m.forward(x);
  (void)argus::evaluate(y, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto dangling = mha{}.forward(x);
  (void)argus::evaluate(dangling, argus::fused);
#endif
}

int main() { return 0; }
