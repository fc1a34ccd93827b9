// evaluate_reference of a rejected expression reports the expression's broken rule and
// nothing more (before, a second error: no evaluate_reference for the rejected marker).
// expect: heads_divide_width
// expect-gcc: Heads = 7
// expect-clang: 32UL % 7UL == 0
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void check(const activation& x) {
  (void)argus::evaluate_reference(argus::split_heads<4>(x));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::evaluate_reference(argus::split_heads<7>(x));  // 7 does not divide 32
#endif
}

int main() { return 0; }
