// forward_for_training keeps its inputs by reference for backward(): a temporary input tensor
// is gone by then (before, this compiled and backward() read freed memory).
// expect: operand_is_not_a_temporary_tensor
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

activation<32> make() { return activation<32>{}; }

void train(const mha& m, const activation<32>& x, const activation<32>& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto dangling = argus::forward_for_training(m, argus::fused, make());
  (void)argus::backward(dangling, dout, argus::fused);
#endif
}

int main() { return 0; }
