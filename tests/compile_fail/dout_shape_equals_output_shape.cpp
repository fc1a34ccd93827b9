// backward(tape, dout, policy): dout = dL/d(out) has the output's shape; here the output is
// (2, 16, 64) and dout is 32 wide.
// expect: dout_shape_equals_output_shape
// expect-gcc: DOutWidth = 32
// expect-clang: dout_shape_equals_output_shape<2UL, 16UL, 32UL, 2UL, 16UL, 64UL>
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<Width>>>;

void train(const mha& m, const activation<64>& x, const activation<64>& dout,
           const activation<32>& bad) {
  auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, bad, argus::fused);  // dout 32 wide, the output 64
#else
  (void)bad;
#endif
}

int main() { return 0; }
