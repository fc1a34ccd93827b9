// tensor_view<T, S>(p, extents...): the run-time extents are integers, of any integer type.
// expect: run_time_extents_are_integers
// expect-gcc: I = \{int, float\}
// expect-clang: is_integral_v<float>
#include <argus/argus.hpp>

#include <vector>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  std::vector<float> f(2 * 3 * 16);
  const argus::tensor_view<float, activations> v(f.data(), 2, 3L);
  (void)v;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::tensor_view<float, activations> w(f.data(), 2, 1.5f);  // not an integer
  (void)w;
#endif
  return 0;
}
