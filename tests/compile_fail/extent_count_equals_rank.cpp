// shape::from_extents({...}) takes one extent per axis, static ones included; here 2 for a
// rank-3 shape (before, the missing extent became 0, or a "static extent is 16 but given
// extent is 0" at run time).
// expect: extent_count_equals_rank
// expect-gcc: N = 2
// expect-clang: from_extents<2UL>
#include <argus/argus.hpp>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

void make() {
  (void)activations::from_extents({2, 3, 16});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)activations::from_extents({2, 3});  // the model axis's 16 left out
#endif
}

int main() { return 0; }
