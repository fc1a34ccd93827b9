// argus::sgd<Module> and argus::adam<Module> update the parameters of a multi_head_attention;
// a prepacked module serves fixed weights and has none to update.
// expect: argument_is_a_multi_head_attention
// expect-gcc: prepacked_attention
// expect-clang: prepacked_attention
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using served = argus::prepacked_attention<mha>;

int main() {
  argus::adam<mha> opt;
  (void)opt;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::adam<served> packed;  // not a module with parameters
  (void)packed;
#endif
  return 0;
}
