// forward_for_training(m, policy, x, options...): the backward kernels compute the built-in
// mask kinds; a mask kind of one's own (here a document mask) evaluates, it does not train.
// expect: masks_have_training_kernels
#include <argus/argus.hpp>

#include <cstddef>
#include <span>
#include <string>

struct same_document {
  using mask_effect = argus::ignores_pairs;
  std::span<const int> document;
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return document[i] != document[j];
  }
  std::string name() const { return "same_document"; }
};

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void train(const mha& m, const activation& x, const activation& dout, std::span<const int> d) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto tape = argus::forward_for_training(m, argus::fused, x, same_document{d});
#else
  const auto out = argus::evaluate(m.forward(x, same_document{d}), argus::fused);
  (void)out;
  const auto tape = argus::forward_for_training(m, argus::fused, x, argus::causal);
#endif
  (void)argus::backward(tape, dout, argus::fused);
}

int main() { return 0; }
