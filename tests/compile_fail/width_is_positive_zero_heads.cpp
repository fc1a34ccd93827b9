// multi_head_attention<DModel, Heads>: at least one head.
// expect: width_is_positive|heads_divide_d_model
// expect-gcc: Heads = 0|Width = 0
// expect-clang: 0UL
#include <argus/argus.hpp>

int main() {
  argus::multi_head_attention<32, 4> fine;
  (void)fine;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::multi_head_attention<32, 0> none;  // zero heads
  (void)none;
#endif
  return 0;
}
