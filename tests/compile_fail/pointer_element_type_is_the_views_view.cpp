// tensor_view<T, S>(p, extents...): p points to elements of type T; a view converts nothing.
// expect: pointer_element_type_is_the_views
// expect-gcc: P = double\*. T = float
// expect-clang: double \*, float
#include <argus/argus.hpp>

#include <vector>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  std::vector<float> f(2 * 3 * 16);
  const argus::tensor_view<float, activations> v(f.data(), 2, 3);
  const argus::tensor_view<const float, activations> c(f.data(), 2, 3);
  (void)v;
  (void)c;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  std::vector<double> d(2 * 3 * 16);
  const argus::tensor_view<float, activations> w(d.data(), 2, 3);  // double elements
  (void)w;
#endif
  return 0;
}
