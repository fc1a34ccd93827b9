// tensor<T, S>(extents...): the run-time extents are integers, of any integer type.
// expect: run_time_extents_are_integers
// expect-gcc: I = \{double, double\}
// expect-clang: is_integral_v<double>
#include <argus/argus.hpp>

#include <cstddef>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  argus::tensor<float, activations> x(std::size_t{2}, 3);
  (void)x;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::tensor<float, activations> y(2.0, 3.0);  // not integers
  (void)y;
#endif
  return 0;
}
