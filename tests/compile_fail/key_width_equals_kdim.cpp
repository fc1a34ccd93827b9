// multi_head_attention<DModel, Heads, {.kdim = K}>::forward(x_q, x_k, x_v): x_k is K wide.
// expect: key_width_equals_kdim
// expect-gcc: XK = const argus::tensor<float, argus::shape<.*argus::model<64>
// expect-clang: '64UL == 32UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8, argus::mha_options{.kdim = 32}>;  // keys 32 wide
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<Width>>>;

void build(const mha& m, const activation<64>& x, const activation<32>& keys) {
  (void)m.forward(x, keys, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x, x);  // keys 64 wide, kdim 32
#else
  (void)keys;
#endif
}

int main() { return 0; }
