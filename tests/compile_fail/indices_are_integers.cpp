// x(i, j, k) takes integer indices (before, x(1.5, 2, 3) compiled, the fraction dropped).
// expect: indices_are_integers
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

float at(const activation<32>& x) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  return x(1.5, 2, 3);
#else
  return x(1, 2, 3);
#endif
}

int main() { return 0; }
