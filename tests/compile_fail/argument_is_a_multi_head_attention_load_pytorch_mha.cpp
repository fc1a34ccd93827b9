// argus::load_pytorch_mha<M>(src) loads a PyTorch nn.MultiheadAttention's state dict into an
// argus::multi_head_attention M; M = int (or a tensor type) is no module to load.
// expect: argument_is_a_multi_head_attention
// expect-gcc: M = int
// expect-clang: load_pytorch_mha<int,
#include <argus/argus.hpp>
#include <argus/io/pytorch_mha.hpp>
#include <argus/io/safetensors.hpp>

using mha = argus::multi_head_attention<64, 8>;

void load(const argus::safetensors_file& weights) {
  const mha m = argus::load_pytorch_mha<mha>(weights);
  (void)m;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::load_pytorch_mha<int>(weights);  // not a module type
  (void)misuse;
#endif
}

int main() { return 0; }
