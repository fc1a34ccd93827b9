// tensor(extents...): one run-time extent per dyn axis, in axis order.
// expect: run_time_extents_match_dyn_axes
// expect-gcc: Given = 1|DynAxes = 2
// expect-clang: 1UL
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>>;

int main() {
  activation x(2, 128);
  (void)x;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  activation y(128);  // the batch is missing
  (void)y;
#endif
  return 0;
}
