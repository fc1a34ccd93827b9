// prepack(m) packs the four weights of a multi_head_attention; a weight tensor alone is
// packed by argus::packed_weight, not by prepack.
// expect: argument_is_a_multi_head_attention
// expect-gcc: Module = tensor<float, shape<model<64>, model<64> > >
#include <argus/eval/prepacked.hpp>

using mha = argus::multi_head_attention<64, 8>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const mha& m, const weight& w) {
  const auto served = argus::prepack(m);
  (void)served;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::prepack(w);  // a tensor, not a module
#else
  (void)w;
#endif
}

int main() { return 0; }
