// explain(e, policy) shows the plan of an expression; a tensor has none (before, this matched
// no overload, and GCC showed only the candidate's requires-clause in its first lines).
// expect: argument_is_an_expression: argus::explain
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void plan(const activation& x) {
  (void)argus::explain(argus::split_heads<4>(x), argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::explain(x, argus::fused);  // a tensor, not an expression
#endif
}

int main() { return 0; }
