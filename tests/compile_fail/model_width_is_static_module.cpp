// multi_head_attention: every width is a compile-time number; argus::dyn is for batch and
// sequence lengths only (before, kdim = dyn compiled and every forward call then failed
// key_width_equals_kdim with KDim = 18446744073709551615).
// expect: model_width_is_static
// expect-gcc: satisfaction of .+model_width_is_static<argus::detail::mha_dims<.*>::kdim>
// expect-clang: kdim does not satisfy 'model_width_is_static'
#include <argus/argus.hpp>

using fine = argus::multi_head_attention<64, 8, argus::mha_options{.kdim = 32}>;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
argus::multi_head_attention<64, 8, argus::mha_options{.kdim = argus::dyn}> m;  // a run-time kdim
#endif

int main() { return fine::kdim == 32 ? 0 : 1; }
