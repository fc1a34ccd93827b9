// argus::bench::register_module<Module>(family) benchmarks a multi_head_attention; a prepacked
// module is benchmarked through rows.others = {argus::bench::prepacked_evaluator<Module>()}.
// expect: argument_is_a_multi_head_attention
// expect: prepacked_evaluator
// expect-gcc: Module = argus::prepacked_attention<argus::multi_head_attention<64, 8
// expect-clang: register_module<argus::prepacked_attention<argus::multi_head_attention<64, 8
#include <argus/argus.hpp>
#include <argus/bench/register.hpp>

using mha = argus::multi_head_attention<64, 8>;

void register_rows() {
  argus::bench::register_module<mha>("mha", {.others = {argus::bench::prepacked_evaluator<mha>()}});
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::bench::register_module<argus::prepacked_attention<mha>>("served");  // not a module
#endif
}

int main() { return 0; }
