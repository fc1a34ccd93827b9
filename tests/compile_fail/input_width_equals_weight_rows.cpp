// project(x, w): x·W needs the width of x to be the number of rows of W.
// expect: input_width_equals_weight_rows
// expect-gcc: input_width_equals_weight_rows<
// expect-clang: '64UL == 32UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
template <std::size_t Rows>
using weight = argus::tensor<float, argus::shape<argus::model<Rows>, argus::model<64>>>;

void build(const activation& x, const weight<64>& w, const weight<32>& w_narrow) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w_narrow);  // x is 64 wide, W has 32 rows
#else
  (void)w_narrow;
#endif
}

int main() { return 0; }
