// tensor_view(p, extents...): one run-time extent per dyn axis, as std::mdspan.
// expect: run_time_extents_match_dyn_axes
// expect-gcc: Given = 3|DynAxes = 2
// expect-clang: 3UL
#include <argus/argus.hpp>

#include <vector>

using view =
    argus::tensor_view<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>>;

int main() {
  std::vector<float> data(2 * 8 * 32);
  view v(data.data(), 2, 8);
  (void)v;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  view w(data.data(), 2, 8, 32);  // the model width is static
  (void)w;
#endif
  return 0;
}
