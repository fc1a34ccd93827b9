// v(i, j, ...) of a tensor_view: one index per axis.
// expect: one_index_per_axis
// expect-gcc: Given = 4
// expect-clang: 4UL == 3UL
#include <argus/argus.hpp>

#include <vector>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  std::vector<float> f(2 * 3 * 16);
  const argus::tensor_view<float, activations> v(f.data(), 2, 3);
  v(1, 2, 15) = 1;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  v(1, 2, 15, 0) = 1;  // rank 3
#endif
  return 0;
}
