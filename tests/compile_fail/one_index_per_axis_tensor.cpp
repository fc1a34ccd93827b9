// x(i, j, ...) of a tensor: one index per axis.
// expect: one_index_per_axis
// expect-gcc: Given = 2
// expect-clang: 2UL == 3UL
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  argus::tensor<float, activations> x(2, 3);
  x(0, 0, 0) = 1;
  const auto& c = x;
  (void)c(1, 2, 15);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  x(0, 0) = 1;  // rank 3
#endif
  return 0;
}
