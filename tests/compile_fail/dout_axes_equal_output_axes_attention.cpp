// backward(tape, dout, policy) of an attention core: dout has the output's axes (batch, head,
// seq, head_dim); here it has (batch, head, seq, seq), whose extents happen to be the
// output's (before, the extents alone were compared, and this compiled).
// expect: dout_axes_equal_output_axes
// expect-gcc: seq<16>, argus::seq<8> >
// expect-clang: seq<16>, argus::seq<8>>
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using split = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<4>, argus::seq<16>, argus::head_dim<8>>>;
using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<16>, argus::seq<8>>>;

void train(const split& q, const split& dout, const weights& bad) {
  auto tape = argus::forward_for_training(argus::attend(argus::softmax(argus::scores(q, q)), q),
                                          argus::fused);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, bad, argus::fused);  // seq<8> where the output has head_dim<8>
#else
  (void)bad;
#endif
}

int main() { return 0; }
