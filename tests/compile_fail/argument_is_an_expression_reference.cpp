// evaluate_reference(e) computes an expression in double; a tensor already holds its value
// (before, this matched no overload and named only the concept Expression).
// expect: argument_is_an_expression: argus::evaluate_reference
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void check(const activation& x) {
  (void)argus::evaluate_reference(argus::split_heads<4>(x));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::evaluate_reference(x);  // a tensor, not an expression
#endif
}

int main() { return 0; }
