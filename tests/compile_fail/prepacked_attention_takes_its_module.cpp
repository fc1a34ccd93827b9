// argus::prepacked_attention<Module>(m) packs the weights of m, a Module. A module of another
// type was "no matching constructor" with the candidates listed; now the rule names both types.
// A non-const module and copies still take their constructors (the twin).
// expect: prepacked_attention_takes_its_module
// expect-gcc: Module = argus::multi_head_attention<64, 8
// expect-clang: multi_head_attention<64, 4
#include <argus/argus.hpp>

#include <utility>

using mha = argus::multi_head_attention<64, 8>;
using narrower = argus::multi_head_attention<64, 4>;

void serve(mha& m, const narrower& other) {
  argus::prepacked_attention<mha> served(m);  // non-const: the module constructor
  const argus::prepacked_attention<mha> copied(served);
  const argus::prepacked_attention<mha> moved(std::move(served));
  (void)copied;
  (void)moved;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::prepacked_attention<mha> misuse(other);  // 4 heads, not 8
  (void)misuse;
#else
  (void)other;
#endif
}

int main() { return 0; }
