// argus/kernel/dispatcher.hpp -- the first translation unit of a dispatching kernel library:
// the kernels of its lowest instruction set, and the entry points a program calls, which run
// the set chosen at the first call.
//
// A dispatching kernel library is
//   - one TU that includes this header, compiled for the lowest set the library holds
//     (baseline x86-64, without -march: the portable kernels), with ARGUS_KERNEL_HAS_AVX2
//     and ARGUS_KERNEL_HAS_AVX512 defined for the other sets it holds;
//   - one TU per other set that includes <argus/kernel/instantiate.hpp>, compiled with
//     -mavx2 -mfma, or -mavx512f -mavx512dq -mavx512bw -mavx512vl (the features cpu_supports
//     checks, kernel/isa.hpp).
// None of them defines ARGUS_DISPATCH_KERNELS; every TU of a program that links the library
// does (argus/kernel/instances.hpp). argus_add_kernel_library(<name> DISPATCH) builds it.
//
// Why the lowest set's kernels share this TU. Code compiled with -mavx2 is not only the
// kernels: the set's TU also emits its own copy of every inline function and template it
// uses from outside argus::kernel::avx2 (the thread pool, std::vector<float>, ...), and
// the linker keeps one copy of each for the whole program, the first it reads. If that were
// the AVX2 copy, a CPU without AVX2 would run AVX2 instructions outside the kernels. A
// program's references to the entry points are what pull this TU out of the library, before
// the TUs of the other sets, which only this TU references: so the copies the linker keeps
// are this TU's, compiled for the lowest set (or the program's own).
#pragma once

#if defined(ARGUS_DISPATCH_KERNELS)
#error \
    "argus/kernel/dispatcher.hpp defines the dispatching entry points: compile it without ARGUS_DISPATCH_KERNELS (only the programs that link the library define it)"
#endif

#include "argus/kernel/instantiate.hpp"

#include <array>
#include <cstdlib>
#include <span>
#include <vector>

#if defined(ARGUS_KERNEL_HAS_AVX2)
static_assert(argus::kernel::compiled_isa < argus::kernel::isa::avx2,
              "argus/kernel/dispatcher.hpp: compile the dispatching TU for a lower instruction "
              "set than the others (without -mavx2): its own kernels are the slowest variant");
namespace argus::kernel::avx2 {
const kernel_variant& compiled_variant() noexcept;  // the avx2 TU's instantiate.hpp
}  // namespace argus::kernel::avx2
#endif
#if defined(ARGUS_KERNEL_HAS_AVX512)
static_assert(argus::kernel::compiled_isa < argus::kernel::isa::avx512,
              "argus/kernel/dispatcher.hpp: compile the dispatching TU for a lower instruction "
              "set than the others (without -mavx512f): its own kernels are the slowest variant");
namespace argus::kernel::avx512 {
const kernel_variant& compiled_variant() noexcept;  // the avx512 TU's instantiate.hpp
}  // namespace argus::kernel::avx512
#endif

// The entry point templates as the program's TUs declare them, in their namespace
// argus::kernel::dispatched, to be specialised below.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ARGUS_KERNEL_TEMPLATE_DECLARATION(T, R, NAME, PARAMS, ARGS) \
  template <class T>                                                \
  R NAME PARAMS;
#define ARGUS_KERNEL_DISPATCHER(T, R, NAME, PARAMS, ARGS) \
  template <>                                             \
  R NAME<T> PARAMS {                                      \
    return active_variant().entry_points<T>().NAME ARGS;  \
  }
// NOLINTEND(bugprone-macro-parentheses)

namespace argus::kernel::dispatched {

ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_TEMPLATE_DECLARATION, T)

std::span<const kernel_variant> kernel_variants() noexcept {
  static const std::array variants {
    compiled_variant(),  // this TU's own set, the lowest
#if defined(ARGUS_KERNEL_HAS_AVX2)
        avx2::compiled_variant(),
#endif
#if defined(ARGUS_KERNEL_HAS_AVX512)
        avx512::compiled_variant(),
#endif
  };
  return variants;
}

const kernel_variant& active_variant() {
  // A function-local static: chosen once, by the first caller, while others wait; when the
  // choice throws, nothing is kept and the next call chooses (and throws) again.
  static const kernel_variant& chosen = []() -> const kernel_variant& {
    const std::span<const kernel_variant> variants = kernel_variants();
    std::vector<isa> held;
    for (const kernel_variant& v : variants) held.push_back(v.id);
    const isa id = choose_isa(std::getenv("ARGUS_ISA"), held);
    for (const kernel_variant& v : variants)
      if (v.id == id) return v;
    return variants.front();  // not reached: choose_isa returns a set of `held`
  }();
  return chosen;
}

isa active_isa() { return active_variant().id; }

ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_DISPATCHER, float)
ARGUS_KERNEL_ENTRY_POINTS(ARGUS_KERNEL_DISPATCHER, double)

}  // namespace argus::kernel::dispatched
