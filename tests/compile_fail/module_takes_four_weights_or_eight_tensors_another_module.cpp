// A multi_head_attention is not converted from a module of another type (its weights have other
// shapes): one argument that is not the module itself is the rule's, with the count.
// expect: module_takes_four_weights_or_eight_tensors
// expect-gcc: Arguments = 1
// expect-clang: '1UL % 4 == 0'
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<64, 8>;
using narrower = argus::multi_head_attention<64, 4>;

void build(const mha& m, const narrower& other) {
  const mha copied(m);
  (void)copied;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha misuse(other);  // 4 heads of 16, not 8 of 8
  (void)misuse;
#else
  (void)other;
#endif
}

int main() { return 0; }
