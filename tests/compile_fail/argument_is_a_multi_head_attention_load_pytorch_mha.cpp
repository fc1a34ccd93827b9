// argus::load_pytorch_mha<M>(src) loads a PyTorch nn.MultiheadAttention's state dict into an
// argus::multi_head_attention M; M = int (or a tensor type) is no module to load.
// expect: argument_is_a_multi_head_attention
// expect-gcc: M = int
// expect-clang: load_pytorch_mha<int,
#include <argus/argus.hpp>
#include <argus/io/pytorch_mha.hpp>
#include <argus/io/safetensors.hpp>

#include <type_traits>

using mha = argus::multi_head_attention<64, 8>;

void load(const argus::safetensors_file& weights) {
  const mha m = argus::load_pytorch_mha<mha>(weights);
  (void)m;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::load_pytorch_mha<int>(weights);  // not a module type
  // What it returned is taken silently (before, each of these was a second error).
  const auto served = argus::prepack(misuse);
  const argus::prepacked_attention packed(misuse);
  argus::adam<std::remove_cv_t<decltype(misuse)>> opt;
  argus::sgd<std::remove_cv_t<decltype(misuse)>> plain;
  (void)served, (void)packed, (void)opt, (void)plain;
#endif
}

int main() { return 0; }
