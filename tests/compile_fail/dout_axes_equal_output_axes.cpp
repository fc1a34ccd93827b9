// backward(tape, dout, policy): dout = dL/d(out) has the output's axes; here the module's
// output is (batch, seq, model) and dout is split into heads (before, GCC printed "(4 == 3)"
// under a message without a rule's name).
// expect: dout_axes_equal_output_axes
// expect-gcc: head_dim<8> >.*model<64>
// expect-clang: head_dim<8>>.*model<64>
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using split = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::head_dim<8>>>;

void train(const mha& m, const activation& x, const activation& dout, const split& bad) {
  auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, bad, argus::fused);  // (batch, head, seq, head_dim)
#else
  (void)bad;
#endif
}

int main() { return 0; }
