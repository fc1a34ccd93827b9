// l(i, j, ...) of a layout: one index per axis (before, "no matching function" and a
// requires-clause, no rule).
// expect: one_index_per_axis
// expect-gcc: Given = 2
// expect-clang: 2UL == 3UL
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  const auto l = argus::layout<activations>::row_major(activations(2, 3));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  return static_cast<int>(l(1, 2));  // rank 3
#else
  return static_cast<int>(l(1, 2, 15));
#endif
}
