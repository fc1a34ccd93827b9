// backward(tape, dout, policy): dout = dL/d(out) has the output's value type; here the module
// computes in float and dout is double.
// expect: value_types_agree: argus::backward
// expect-gcc: DOut = const argus::tensor<double
// expect-clang: tensor<double
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <class T>
using activation =
    argus::tensor<T, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void train(const mha& m, const activation<float>& x, const activation<float>& dout,
           const activation<double>& bad) {
  auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, bad, argus::fused);  // double, the module is float
#else
  (void)bad;
#endif
}

int main() { return 0; }
