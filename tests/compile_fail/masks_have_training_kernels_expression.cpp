// forward_for_training(e, policy) of an attention core whose mask is of a kind of one's own
// (ALiBi's per-head bias here): the backward kernels compute the built-in kinds only.
// expect: masks_have_training_kernels
#include <argus/argus.hpp>

#include <cmath>
#include <cstddef>
#include <string>

struct alibi {
  using mask_effect = argus::adds_to_pairs<float>;
  std::size_t heads;
  float added(std::size_t, std::size_t h, std::size_t i, std::size_t j) const {
    return -std::exp2(-8.0f * static_cast<float>(h + 1) / static_cast<float>(heads)) *
           static_cast<float>(i > j ? i - j : j - i);
  }
  std::string name() const { return "alibi"; }
};

using heads = argus::tensor<
    float, argus::shape<argus::batch<1>, argus::head<8>, argus::seq<16>, argus::head_dim<8>>>;

void train(const heads& q, const heads& k, const heads& v) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto core = argus::attend(argus::softmax(argus::mask(argus::scores(q, k), alibi{8})), v);
#else
  const auto core =
      argus::attend(argus::softmax(argus::mask(argus::scores(q, k), argus::causal)), v);
#endif
  const auto tape = argus::forward_for_training(core, argus::fused);
  (void)tape;
}

int main() { return 0; }
