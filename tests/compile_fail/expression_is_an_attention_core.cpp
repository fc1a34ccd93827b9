// forward_for_training(e, policy): an expression it trains is an attention core,
// attend(softmax(scores(q, k) [masked]), v), or merge_heads of one; here it is the scores. The
// tape it rejects is taken by backward() silently (before, forward_for_training returned void
// there, and `auto tape = ...` was a second error).
// expect: expression_is_an_attention_core
// expect: e is an attention core
#include <argus/grad/training.hpp>
#include <argus/tensor/tensor.hpp>

using heads_t = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<4>, argus::seq<8>, argus::head_dim<16>>>;

void train(const heads_t& q, const heads_t& k, const heads_t& v, const heads_t& dout) {
  const auto tape = argus::forward_for_training(
      argus::attend(argus::softmax(argus::scores(q, k)), v), argus::fused);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto scores_tape = argus::forward_for_training(argus::scores(q, k), argus::fused);
  (void)argus::backward(scores_tape, dout, argus::fused);  // no softmax, no attend
#endif
}

int main() { return 0; }
