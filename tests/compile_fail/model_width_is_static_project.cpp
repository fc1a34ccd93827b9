// project(x, w): the widths of x and w are compile-time extents; only batch and seq are dyn.
// expect: model_width_is_static
// expect-gcc: model<18446744073709551615>
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>>;
using weight = argus::tensor<float, argus::shape<argus::model<32>, argus::model<16>>>;
using run_time_weight =
    argus::tensor<float, argus::shape<argus::model<32>, argus::model<argus::dyn>>>;

void build(const activation& x, const weight& w, const run_time_weight& wd) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, wd);  // (32, dyn)
#else
  (void)wd;
#endif
}

int main() { return 0; }
