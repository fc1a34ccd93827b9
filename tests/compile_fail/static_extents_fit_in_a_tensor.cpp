// A shape whose static extents multiply to more than PTRDIFF_MAX elements (2^32 · 2^32 = 2^64).
// expect: static_extents_fit_in_a_tensor
// expect-gcc: Extents = \{4294967296, 4294967296\}
// expect-clang: 4294967296UL
#include <argus/argus.hpp>

int main() {
  argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>> w;
  (void)w;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  constexpr std::size_t wide = std::size_t{1} << 32;
  argus::tensor<float, argus::shape<argus::model<wide>, argus::model<wide>>> huge;
  (void)huge;
#endif
  return 0;
}
