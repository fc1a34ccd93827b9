// stored_tensor::values<T>() converts a stored tensor's elements to float or double, the value
// types of argus (exactly, never rounding); int is not one.
// expect: value_type_is_float_or_double
// expect-gcc: T = int
// expect-clang: values<int>
#include <argus/argus.hpp>
#include <argus/io/npy.hpp>
#include <argus/io/stored_tensor.hpp>

#include <vector>

void read() {
  const argus::stored_tensor t = argus::read_npy("w.npy");
  const std::vector<float> v = t.values<float>();
  (void)v;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = t.values<int>();  // argus converts to float or double only
  (void)misuse;
#endif
}

int main() { return 0; }
