// shape<Axes...>(extents...): the run-time extents are integers, of any integer type.
// expect: run_time_extents_are_integers
// expect-gcc: I = \{double, int\}
// expect-clang: is_integral_v<double>
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  const activations s(2u, static_cast<unsigned char>(3));
  (void)s;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const activations t(2.0, 3);  // not an integer
  (void)t;
#endif
  return 0;
}
