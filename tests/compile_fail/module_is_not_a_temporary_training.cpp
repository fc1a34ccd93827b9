// forward_for_training(m, ...) keeps a reference to m, whose weights backward() reads: a
// temporary module is gone by then (before, this compiled).
// expect: module_is_not_a_temporary
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void train(const mha& m, const activation<32>& x, const activation<32>& dout) {
  const auto tape = argus::forward_for_training(m, argus::fused, x);
  (void)argus::backward(tape, dout, argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto dangling = argus::forward_for_training(mha{}, argus::fused, x);
  (void)argus::backward(dangling, dout, argus::fused);
#endif
}

int main() { return 0; }
