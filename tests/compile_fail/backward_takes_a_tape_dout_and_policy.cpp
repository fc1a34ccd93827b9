// backward(tape, dout, policy): the policy is not optional (before: "no matching function").
// expect: backward_takes_a_tape_dout_and_policy
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void train(const mha& m, const activation<32>& x, const activation<32>& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::backward(tape, dout);
#else
  (void)argus::backward(tape, dout, argus::fused);
#endif
}

int main() { return 0; }
