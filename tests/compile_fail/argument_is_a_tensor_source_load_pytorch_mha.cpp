// argus::load_pytorch_mha<M>(src) reads src, a TensorSource: an argus::safetensors_file or an
// argus::npy_directory. A path is not one: open the file first.
// expect: argument_is_a_tensor_source
// expect-gcc: Src = char .16.
// expect-clang: char.16.
#include <argus/argus.hpp>
#include <argus/io/npy.hpp>
#include <argus/io/pytorch_mha.hpp>
#include <argus/io/safetensors.hpp>

using mha = argus::multi_head_attention<64, 8>;

void load() {
  const mha m = argus::load_pytorch_mha<mha>(argus::safetensors_file("mha.safetensors"));
  const mha n = argus::load_pytorch_mha<mha>(argus::npy_directory("mha"));
  (void)m;
  (void)n;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::load_pytorch_mha<mha>("mha.safetensors");  // a path, not a file
  (void)misuse;
#endif
}

int main() { return 0; }
