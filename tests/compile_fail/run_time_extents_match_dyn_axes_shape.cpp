// shape<Axes...>(extents...): one run-time extent per dyn axis, in axis order (as std::extents).
// expect: run_time_extents_match_dyn_axes
// expect-gcc: Given = 1
// expect-clang: 1UL == 2UL
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  const activations s(2, 9);
  (void)s;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const activations t(2);  // the seq extent is missing
  (void)t;
#endif
  return 0;
}
