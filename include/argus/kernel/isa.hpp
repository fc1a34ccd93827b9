// argus/kernel/isa.hpp -- kernel layer: the instruction sets the kernels are compiled for, the
// namespace each set's code lives in, and the choice of one at run time.
//
// The kernels are written once against kernel/simd.hpp, whose register width follows the
// compilation target: AVX-512 (`__AVX512F__`), AVX2 with FMA (`__AVX2__` and `__FMA__`), or a
// portable 16-byte path. Every kernel header puts its code in an inline namespace of
// argus::kernel named after that set: argus::kernel::avx512, ::avx2 or ::portable. User code
// names argus::kernel::flash_attention and never sees the inline namespace, but two
// translation units compiled for different sets now define different functions instead of
// breaking the One Definition Rule. The data the entry points take (attention_problem,
// attention_backward_problem) and the thread pool stay outside, shared by every set.
//
// A dispatching kernel library (argus_add_kernel_library(<name> DISPATCH),
// argus/kernel/dispatcher.hpp) holds several sets side by side and picks one at the first
// call. Programs linking it define ARGUS_DISPATCH_KERNELS: their own kernel code then lives
// in argus::kernel::dispatched, and every entry point is a call through the chosen set's
// table (argus/kernel/entry_points.hpp, instances.hpp). docs/explanation/isa_dispatch.md has
// the design.
#pragma once

#include "argus/detail/quote_text.hpp"

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

// The instruction set this translation unit is compiled for, as a namespace name.
#if defined(__AVX512F__)
#define ARGUS_KERNEL_TARGET_ISA avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define ARGUS_KERNEL_TARGET_ISA avx2
#else
#define ARGUS_KERNEL_TARGET_ISA portable
#endif

// The inline namespace of argus::kernel that holds this translation unit's kernel code.
#if defined(ARGUS_DISPATCH_KERNELS)
#define ARGUS_KERNEL_ISA_NAMESPACE dispatched
#else
#define ARGUS_KERNEL_ISA_NAMESPACE ARGUS_KERNEL_TARGET_ISA
#endif

namespace argus::kernel {

/// The instruction sets argus's kernels are compiled for, slowest first.
enum class isa { portable, avx2, avx512 };

/// "portable", "avx2" or "avx512": the namespace, the ARGUS_ISA value and the CMake name.
constexpr const char* isa_name(isa i) noexcept {
  switch (i) {
    case isa::avx2:
      return "avx2";
    case isa::avx512:
      return "avx512";
    case isa::portable:
      break;
  }
  return "portable";
}

/// Bytes in one vector register of a set's code: 64 (AVX-512), 32 (AVX2), 16 (portable).
constexpr std::size_t isa_register_bytes(isa i) noexcept {
  switch (i) {
    case isa::avx2:
      return 32;
    case isa::avx512:
      return 64;
    case isa::portable:
      break;
  }
  return 16;
}

/// The CPU features a set's code may use, as __builtin_cpu_supports names them.
constexpr const char* isa_features(isa i) noexcept {
  switch (i) {
    case isa::avx2:
      return "avx2, fma";
    case isa::avx512:
      return "avx512f, avx512dq, avx512bw, avx512vl";
    case isa::portable:
      break;
  }
  return "the compilation target's baseline";
}

/// Whether this CPU, and the operating system, can run code compiled for `i`: AVX2 code
/// needs avx2 and fma, AVX-512 code avx512f, avx512dq, avx512bw and avx512vl (the flags a
/// dispatching library compiles it with). __builtin_cpu_supports also checks that the OS
/// saves the wider registers. Off x86, only the portable code runs.
inline bool cpu_supports(isa i) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (i) {
    case isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case isa::portable:
      break;
  }
  return true;
#else
  return i == isa::portable;
#endif
}

/// The error of a run-time choice that cannot be honoured: ARGUS_ISA names no instruction
/// set, or one this CPU cannot run, or one the kernel library does not hold.
class isa_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace dispatch_detail {
inline std::string isa_list(std::span<const isa> sets, bool (*keep)(isa)) {
  std::string out;
  for (auto it = sets.rbegin(); it != sets.rend(); ++it)
    if (keep == nullptr || keep(*it)) out += (out.empty() ? "" : ", ") + std::string(isa_name(*it));
  return out.empty() ? "none" : out;
}
}  // namespace dispatch_detail

/// The set a dispatching kernel library runs, among `held` (the sets it holds), given
/// `request`, the value of the environment variable ARGUS_ISA (nullptr or "" when unset):
///   - no request: the fastest held set `cpu_runs` accepts;
///   - "portable", "avx2" or "avx512": that set.
/// Throws isa_error, naming the request and the alternatives, when the request names no
/// set, a set `cpu_runs` rejects, or a set `held` lacks: asking for a set explicitly never
/// runs another one.
inline isa choose_isa(const char* request, std::span<const isa> held,
                      bool (*cpu_runs)(isa) = &cpu_supports) {
  const auto holds = [&](isa i) {
    for (const isa h : held)
      if (h == i) return true;
    return false;
  };
  if (request == nullptr || *request == '\0') {
    for (auto it = held.rbegin(); it != held.rend(); ++it)
      if (cpu_runs(*it)) return *it;
    throw isa_error("argus: this CPU can run none of the kernel library's instruction sets (" +
                    dispatch_detail::isa_list(held, nullptr) + ")");
  }
  const std::string asked = argus::detail::quote_text(request, 40, '"');
  for (const isa i : {isa::portable, isa::avx2, isa::avx512}) {
    if (std::string_view(request) != isa_name(i)) continue;
    if (!cpu_runs(i))
      throw isa_error(
          "argus: ARGUS_ISA=" + asked + " asks for code this CPU cannot run (it needs " +
          isa_features(i) +
          "); of this library's sets it can run: " + dispatch_detail::isa_list(held, cpu_runs));
    if (!holds(i))
      throw isa_error("argus: ARGUS_ISA=" + asked +
                      " asks for a set this kernel library was built without; it holds: " +
                      dispatch_detail::isa_list(held, nullptr));
    return i;
  }
  throw isa_error("argus: ARGUS_ISA=" + asked +
                  " names no instruction set; use portable, avx2 or avx512, or unset it to "
                  "run the fastest this CPU supports");
}

}  // namespace argus::kernel

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

/// The instruction set this translation unit's kernel code is compiled for.
inline constexpr isa compiled_isa = isa::ARGUS_KERNEL_TARGET_ISA;

#if defined(ARGUS_DISPATCH_KERNELS)
/// The instruction set the kernel entry points run: chosen by the dispatching kernel library
/// at the first call (choose_isa with ARGUS_ISA), then fixed for the process. Throws
/// isa_error when ARGUS_ISA cannot be honoured (and so does every entry point then).
isa active_isa();
/// Whether active_isa() is chosen at run time: true, a dispatching kernel library chooses it.
inline constexpr bool isa_chosen_at_run_time = true;
#else
/// The instruction set the kernel entry points run: without a dispatching kernel library,
/// the one this translation unit is compiled for.
inline isa active_isa() { return compiled_isa; }
/// Whether active_isa() is chosen at run time: false, it is the compilation target's.
inline constexpr bool isa_chosen_at_run_time = false;
#endif

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
