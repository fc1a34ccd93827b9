// multi_head_attention<DModel, Heads, {.vdim = V}>::forward(x_q, x_k, x_v): x_v is V wide.
// expect: value_width_equals_vdim
// expect-gcc: XV = const argus::tensor<float, argus::shape<.*argus::model<64>
// expect-clang: '64UL == 48UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8, argus::mha_options{.vdim = 48}>;  // values 48 wide
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<Width>>>;

void build(const mha& m, const activation<64>& x, const activation<48>& values) {
  (void)m.forward(x, x, values);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x, x);  // values 64 wide, vdim 48
#else
  (void)values;
#endif
}

int main() { return 0; }
