// v(i, j, k) of a view takes integer indices (before, v(1, 2.0f, 3) compiled).
// expect: indices_are_integers
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

float at(const activation<32>& x) {
  const auto v = x.view();
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  return v(1, 2.0f, 3);
#else
  return v(1, 2, 3);
#endif
}

int main() { return 0; }
