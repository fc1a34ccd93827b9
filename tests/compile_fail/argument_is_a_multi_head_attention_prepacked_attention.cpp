// argus::prepacked_attention<Module> packs the four weights of a multi_head_attention; a weight
// tensor is packed by argus::packed_weight. One error, and no member of the tensor looked up
// after it.
// expect: argument_is_a_multi_head_attention
// expect-gcc: class argus::prepacked_attention<argus::tensor<float, argus::shape<
// expect-clang: class 'argus::prepacked_attention<argus::tensor<float, argus::shape<
#include <argus/argus.hpp>
#include <argus/eval/prepacked.hpp>

using mha = argus::multi_head_attention<64, 8>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const mha& m, const weight& w) {
  const argus::prepacked_attention<mha> served(m);
  (void)served;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::prepacked_attention<weight> misuse(w);  // a tensor, not a module
  (void)misuse;
#else
  (void)w;
#endif
}

int main() { return 0; }
