// tensor<T, S> holds arithmetic values (float, double, uint8_t, bool, ...).
// expect: value_type_is_arithmetic
// expect: basic_string<char
#include <argus/argus.hpp>

#include <cstdint>
#include <string>

using activations = argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>;

int main() {
  argus::tensor<std::uint8_t, activations> codes(2, 3);
  (void)codes;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::tensor<std::string, activations> words(2, 3);  // not a number
  (void)words;
#endif
  return 0;
}
