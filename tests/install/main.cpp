// Consumer of an installed (or add_subdirectory'd) argus: proves the headers and the
// argus::argus usage requirements (C++20, include path, Boost, Threads) reach a user.
#if __has_include(<argus/argus.hpp>)
#include <argus/argus.hpp>
#endif
#include <argus/kernel/simd.hpp>

#include <cstdio>

int main() {
  auto v = argus::kernel::simd<float>::broadcast(2.0f);
  std::printf("argus consumer: simd isa %s (kernels run %s), %zu float lanes, lane 0 = %g\n",
              argus::kernel::simd_isa, argus::kernel::isa_name(argus::kernel::active_isa()),
              argus::kernel::simd<float>::width, double(v[0]));
  return v[0] == 2.0f ? 0 : 1;
}
