// tensor_view<T, S>(p) views elements of type T: a pointer to another type is the rule's error
// (it was "no matching function" when no extents followed the pointer).
// expect: pointer_element_type_is_the_views
// expect-gcc: double\*
// expect-clang: double \*
#include <argus/argus.hpp>

#include <vector>

using fixed = argus::shape<argus::batch<2>, argus::seq<8>, argus::model<32>>;

int main() {
  std::vector<float> f(2 * 8 * 32);
  std::vector<double> d(2 * 8 * 32);
  const argus::tensor_view<float, fixed> v(f.data());
  (void)v;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::tensor_view<float, fixed> misuse(d.data());  // double elements
  (void)misuse;
#else
  (void)d;
#endif
  return 0;
}
