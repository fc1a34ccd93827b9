// argus::packed_weight<T, S>(w) packs a weight of shape type S: a (64, 32) weight does not become
// a packed_weight of a (64, 64) one.
// expect: weight_shape_equals_packed_shape
#include <argus/argus.hpp>
#include <argus/eval/packed_weight.hpp>

using square = argus::shape<argus::model<64>, argus::model<64>>;
using narrow = argus::shape<argus::model<64>, argus::model<32>>;

void build(const argus::tensor<float, square>& w, const argus::tensor<float, narrow>& w32) {
  const argus::packed_weight<float, square> packed(w);
  (void)packed;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::packed_weight<float, square> misuse(w32);  // a (64, 32) weight
  (void)misuse;
#else
  (void)w32;
#endif
}

int main() { return 0; }
