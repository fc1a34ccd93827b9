// A prepacked_attention holds packed copies of a module's weights: it is built from the module
// (prepack(m), or prepacked_attention<Module>(m)), never empty.
// expect: prepacked_attention_takes_its_module
// expect-clang: multi_head_attention<32, 4, .*does not satisfy
// expect-clang: 0 == 1
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;

void serve(const mha& m) {
  const auto served = argus::prepack(m);
  (void)served;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::prepacked_attention<mha> misuse;  // nothing to pack
  (void)misuse;
#endif
}

int main() { return 0; }
