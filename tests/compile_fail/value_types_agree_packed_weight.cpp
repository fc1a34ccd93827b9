// argus::packed_weight<T, S>(w) packs a weight of value type T: a tensor of doubles does not
// become a packed_weight<float, S> (convert the elements first, or pack a packed_weight<double>).
// expect: value_types_agree
// expect-gcc: A = float. B = double
// expect-clang: is_same_v<float, double>
#include <argus/argus.hpp>
#include <argus/eval/packed_weight.hpp>

using weight_shape = argus::shape<argus::model<64>, argus::model<64>>;

void build(const argus::tensor<float, weight_shape>& w,
           const argus::tensor<double, weight_shape>& w64) {
  const argus::packed_weight<float, weight_shape> packed(w);
  const argus::packed_weight<double, weight_shape> packed64(w64);
  (void)packed;
  (void)packed64;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::packed_weight<float, weight_shape> misuse(w64);  // doubles into a float weight
  (void)misuse;
#endif
}

int main() { return 0; }
