// split_heads<Heads>(x): at least one head, dividing the width of x. Zero heads shows the 0.
// expect: heads_divide_width
// expect-gcc: Heads = 0
// expect-clang: 0UL
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<32>>>;

void build(const activation& x) {
  (void)argus::split_heads<4>(x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::split_heads<0>(x);
#endif
}

int main() { return 0; }
