// shape<Axes...>(extents...) of a shape without dyn axes takes no extents: the static ones come
// from the type.
// expect: run_time_extents_match_dyn_axes
// expect-gcc: Given = 1
// expect-clang: 1UL == 0UL
#include <argus/argus.hpp>

using bias = argus::shape<argus::model<16>>;

int main() {
  constexpr bias s;
  static_assert(s.extent(0) == 16);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const bias t(16);  // 16 is already in the type
  (void)t;
#endif
  return 0;
}
