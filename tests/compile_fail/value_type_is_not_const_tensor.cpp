// tensor<T, S> owns its elements: T is not const. Read-only elements are a const tensor, or a
// tensor_view<const T, S>.
// expect: value_type_is_not_const
// expect-gcc: T = const float
// expect-clang: const float
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  const argus::tensor<float, activations> x(2, 3);
  const argus::tensor_view<const float, activations> v = x;
  (void)v;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::tensor<const float, activations> y(2, 3);  // const elements
  (void)y;
#endif
  return 0;
}
