// backward(tape, dout, policy) of an attention core: dout = dL/d(out) has the output's shape
// (batch, heads, seq_q, d_v); here the output is (2, 4, 8, 16) and dout has 2 heads.
// expect: dout_shape_equals_attention_shape
// expect-gcc: DOutHeads = 2
// expect-clang: dout_shape_equals_attention_shape<2UL, 2UL, 8UL, 16UL, 2UL, 4UL, 8UL, 16UL>
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

template <std::size_t Heads>
using heads_t = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<Heads>, argus::seq<8>, argus::head_dim<16>>>;

void train(const heads_t<4>& q, const heads_t<4>& k, const heads_t<4>& v, const heads_t<4>& dout,
           const heads_t<2>& bad) {
  auto tape = argus::forward_for_training(argus::attend(argus::softmax(argus::scores(q, k)), v),
                                          argus::fused);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, bad, argus::fused);  // 2 heads, the output has 4
#else
  (void)bad;
#endif
}

int main() { return 0; }
