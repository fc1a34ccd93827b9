// argus::bench::register_module<Module>(family) benchmarks a module of float: its rows hand
// float inputs and weights to every evaluator (module_problem). A double module is not one.
// expect: benchmarked_module_is_float
// expect-gcc: T = double
// expect-clang: is_same_v<double, float>
#include <argus/argus.hpp>
#include <argus/bench/register.hpp>

using mha = argus::multi_head_attention<64, 8>;
using mha_double = argus::multi_head_attention<64, 8, argus::mha_options{}, double>;

void register_rows() {
  argus::bench::register_module<mha>("mha");
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::bench::register_module<mha_double>("mha_double");  // float only
#endif
}

int main() { return 0; }
