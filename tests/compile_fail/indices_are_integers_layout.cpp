// l(i, j, ...) of a layout takes integer indices (before, l(1.5, 0.7, 2) compiled, the
// fractions dropped).
// expect: indices_are_integers
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  const auto l = argus::layout<activations>::row_major(activations(2, 3));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  return static_cast<int>(l(1.5, 0.7, 2));
#else
  return static_cast<int>(l(1, 0, 2));
#endif
}
