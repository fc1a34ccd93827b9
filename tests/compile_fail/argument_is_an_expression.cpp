// evaluate(e, policy): e is an expression; a tensor already holds its value.
// expect: argument_is_an_expression
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void build(const activation& x) {
  (void)argus::evaluate(argus::split_heads<4>(x), argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::evaluate(x, argus::fused);  // a tensor, not an expression
#endif
}

int main() { return 0; }
