// evaluate(e, policy, out): out is a tensor of e's value type and shape type.
// expect: output_is_a_tensor_of_the_expression_shape
// expect-gcc: model<24>
// expect-clang: model<24>
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void build(const mha& m, const activation<32>& x, activation<32>& out, activation<24>& narrow) {
  argus::evaluate(m.forward(x), argus::fused, out);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::evaluate(m.forward(x), argus::fused, narrow);  // 24 wide, the output is 32 wide
#else
  (void)narrow;
#endif
}

int main() { return 0; }
