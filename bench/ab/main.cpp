// bench/ab/main.cpp -- the driver of ab.sh: calls two revisions' kernels alternately in one
// process and reports the ratio of their times, pair by pair.
//
// The hosts argus is tuned on are virtual machines whose speed drifts by 10-50 % over
// minutes (a neighbour on the core's other hardware thread, frequency); two benchmark runs
// one after the other compare the host's minutes as much as the code. Here every round
// times A then B (or B then A, alternating) on the same inputs within a few tens of
// milliseconds, and the median of the per-round ratios A ÷ B is reported with its
// quartiles. An A/A run (the same revision twice) shows the method's own bias: within
// ±0.5 % on the Zen 4 machine of docs/performance.md.
//
// With --peak as the last argument, every round also measures the FMA peak of the same
// thread count (argus/bench/peak.hpp, about 0.2 s) just before its A and B calls, and the
// report adds each side's median share of the peak measured in its own round: a share of
// the peak that the host's drift moves far less than a peak measured once per program and
// set against times taken minutes later.
//
//   main attention <n> <rounds> <causal 0|1> <threads> [d]
//                                                         flash_attention, h 8, d_k = d_v = d
//                                                         (64 if not given), float
//   main gemm <m> <rounds> [n k]                          gemm_nn (m × k) · (k × n), row-major,
//                                                         n = k = 512 if not given
//   main packed <m> <rounds> [n k]                        the same product on B packed once
//                                                         (pack_gemm_b, as argus::prepack)
//   main split <m> <rounds> <d_model> <d_k>               gemm_nn_split (m × d_model) ·
//                                                         (d_model × d_model) into heads of d_k
//   main backward <n> <rounds> <causal 0|1> <threads> [d]
//                                                         flash_attention_backward, h 8, d (64
//                                                         if not given), float (O and lse from
//                                                         A's forward)
//   main mha <n> <rounds> <causal 0|1> <threads>         the fused MHA forward's kernels, d_model
//                                                         512, h 8 (variant.cpp, argus_ab_mha_*)
//   main decode <keys> <rounds> <heads> <kv_heads> <threads> [d]
//                                                         one decode step: one query of <heads>
//                                                         heads over <kv_heads> K/V heads of
//                                                         <keys> keys, d 128 if not given; each
//                                                         call over the next layer's K/V cache
//
// The operands lie as argus's own tensors do (argus/tensor/aligned_buffer.hpp): on a cache
// line, and 2 MiB and larger ones on huge pages where Linux allows. ARGUS_AB_MISALIGN=BYTES
// in the environment (a multiple of 4 below 64) moves every one that many bytes past its line,
// as operands that are views of memory argus did not allocate may lie (a malloc'ed block: 16
// bytes past a line). ARGUS_AB_COPIES=N (gemm, packed and split): N copies of B, each call reading
// the next, so that a B that a loop over one copy would keep partly in L3 comes from memory, as a
// model's weights do when its layers run one after another (2 or 3 for a 64 MiB B with a 32 MiB
// L3); the outputs are the same either way. ARGUS_AB_LDB=N (gemm and packed): B's rows N elements
// apart (N from n to n + 65536; n if unset), so that a width whose rows would lie a multiple of
// 4 KiB apart (n 1024, 4096) can be measured with the rows a line further apart (n + 16). The
// decode workload's calls take the K/V caches of as many layers as make decode_cache_bytes (512
// MiB) in turn, so that every call reads its K and V from memory as a model's forward pass does
// with its other layers between (bench_kernel_attention's flash_decode_model); ARGUS_AB_COPIES=N
// gives it N layers instead (1: one call's K and V repeated, in L2 or L3 where they fit).
#include "argus/bench/peak.hpp"
#include "argus/kernel/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <sys/mman.h>
#include <vector>

extern "C" void argus_ab_attention_a(std::size_t, std::size_t, std::size_t, bool, const float*,
                                     const float*, const float*, float*);
extern "C" void argus_ab_attention_b(std::size_t, std::size_t, std::size_t, bool, const float*,
                                     const float*, const float*, float*);
extern "C" void argus_ab_forward_lse_a(std::size_t, std::size_t, std::size_t, bool, const float*,
                                       const float*, const float*, float*, float*);
extern "C" void argus_ab_backward_a(std::size_t, std::size_t, std::size_t, bool, const float*,
                                    const float*, const float*, const float*, const float*,
                                    const float*, float*);
extern "C" void argus_ab_backward_b(std::size_t, std::size_t, std::size_t, bool, const float*,
                                    const float*, const float*, const float*, const float*,
                                    const float*, float*);
extern "C" void argus_ab_gemm_a(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                const float*, float*);
extern "C" void argus_ab_gemm_b(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                const float*, float*);
extern "C" void argus_ab_packed_a(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                  const float*, float*);
extern "C" void argus_ab_packed_b(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                  const float*, float*);
extern "C" void argus_ab_split_a(std::size_t, std::size_t, std::size_t, const float*, const float*,
                                 float*);
extern "C" void argus_ab_split_b(std::size_t, std::size_t, std::size_t, const float*, const float*,
                                 float*);
extern "C" void argus_ab_decode_a(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                  const float*, const float*, float*);
extern "C" void argus_ab_decode_b(std::size_t, std::size_t, std::size_t, std::size_t, const float*,
                                  const float*, const float*, float*);
extern "C" void argus_ab_mha_a(std::size_t, std::size_t, std::size_t, bool, const float*,
                               const float*, float*, float*);
extern "C" void argus_ab_mha_b(std::size_t, std::size_t, std::size_t, bool, const float*,
                               const float*, float*, float*);

namespace {

/// Bytes past a cache line at which every operand starts (ARGUS_AB_MISALIGN, 0 if unset).
std::size_t misalign_bytes() {
  static const std::size_t bytes = [] {
    const char* s = std::getenv("ARGUS_AB_MISALIGN");
    const std::size_t b = s != nullptr ? std::strtoul(s, nullptr, 10) : 0;
    if (b % sizeof(float) != 0 || b >= 64) {
      std::fprintf(stderr, "ARGUS_AB_MISALIGN=%s: a multiple of 4 below 64\n", s);
      std::exit(2);
    }
    return b;
  }();
  return bytes;
}

/// Copies of the gemm, packed and split workloads' B that its calls take in turn (ARGUS_AB_COPIES,
/// 1 if unset).
std::size_t b_copies() {
  const char* s = std::getenv("ARGUS_AB_COPIES");
  const long c = s != nullptr ? std::strtol(s, nullptr, 10) : 1;
  if (c < 1 || c > 64) {
    std::fprintf(stderr, "ARGUS_AB_COPIES=%s: a count from 1 to 64\n", s);
    std::exit(2);
  }
  return std::size_t(c);
}

/// The sliding window of the attention, backward and mha workloads' causal mask (ARGUS_AB_WINDOW:
/// each query sees its last W keys; 0, no window, if unset).
std::size_t causal_window() {
  const char* s = std::getenv("ARGUS_AB_WINDOW");
  if (s == nullptr) return 0;
  const long w = std::strtol(s, nullptr, 10);
  if (w < 1) {
    std::fprintf(stderr, "ARGUS_AB_WINDOW=%s: a count of keys, at least 1\n", s);
    std::exit(2);
  }
  return std::size_t(w);
}

/// Whether the attention and backward workloads' operands are split-heads views (ARGUS_AB_HEADS:
/// `split`, rows h · d apart, as BM_core's; `contiguous`, each head's rows one after the other,
/// the default).
bool split_heads() {
  const char* s = std::getenv("ARGUS_AB_HEADS");
  if (s == nullptr || std::strcmp(s, "contiguous") == 0) return false;
  if (std::strcmp(s, "split") == 0) return true;
  std::fprintf(stderr, "ARGUS_AB_HEADS=%s: split or contiguous\n", s);
  std::exit(2);
}

/// The share of the n × n pairs that the problem computes: 1, or under causal the pairs (i, j)
/// with j <= i within the window, Σ_i min(i + 1, W), over n² (1/2 without a window, as counted
/// before windows: n²/2 rather than n(n + 1)/2).
double pair_share(std::size_t n, bool causal) {
  if (!causal) return 1.0;
  const std::size_t w = causal_window();
  if (w == 0 || w >= n) return 0.5;
  const double pairs = 0.5 * double(w) * double(w + 1) + double(n - w) * double(w);
  return pairs / (double(n) * double(n));
}

/// The decode workload's K and V caches together: every call's K and V come from memory.
constexpr std::size_t decode_cache_bytes = std::size_t{512} << 20;

/// Layers of K/V caches the decode workload's calls take in turn, one layer's K and V making
/// `layer_bytes`: as many as make decode_cache_bytes (at least 2), or ARGUS_AB_COPIES's count.
std::size_t decode_layers(std::size_t layer_bytes) {
  if (std::getenv("ARGUS_AB_COPIES") != nullptr) return b_copies();
  return std::max<std::size_t>(2, decode_cache_bytes / layer_bytes);
}

/// MiB of the process's anonymous memory on transparent huge pages (AnonHugePages of
/// /proc/self/smaps_rollup), -1 where the kernel does not say: whether the decode workload's
/// caches came on 2 MiB pages, which each process gets or not as the host's memory allows.
long anon_huge_mib() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

/// The row stride of the gemm and packed workloads' B (ARGUS_AB_LDB, n if unset), in elements.
std::size_t b_row_stride(std::size_t n) {
  const char* s = std::getenv("ARGUS_AB_LDB");
  if (s == nullptr) return n;
  const long l = std::strtol(s, nullptr, 10);
  if (l < long(n) || l > long(n) + 65536) {
    std::fprintf(stderr, "ARGUS_AB_LDB=%s: a row stride from n (%zu) to n + 65536\n", s, n);
    std::exit(2);
  }
  return std::size_t(l);
}

/// The operands' storage, laid out as argus/tensor/aligned_buffer.hpp lays a tensor's out
/// (then moved by misalign_bytes()).
template <class T>
struct operand_allocator {
  using value_type = T;
  static constexpr std::size_t huge = std::size_t{2} << 20;
  operand_allocator() = default;
  template <class U>
  operand_allocator(const operand_allocator<U>&) noexcept {}
  static std::size_t alignment(std::size_t bytes) noexcept { return bytes >= huge ? huge : 64; }
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T) + misalign_bytes();
    void* p = ::operator new (bytes, std::align_val_t{alignment(bytes)});
    if (bytes >= huge) madvise(p, bytes / huge * huge, MADV_HUGEPAGE);
    return reinterpret_cast<T*>(static_cast<char*>(p) + misalign_bytes());
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T) + misalign_bytes();
    ::operator delete (reinterpret_cast<char*>(p) - misalign_bytes(),
                       std::align_val_t{alignment(bytes)});
  }
  template <class U>
  bool operator==(const operand_allocator<U>&) const noexcept {
    return true;
  }
};
using operand = std::vector<float, operand_allocator<float>>;

double quantile(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  return x[std::size_t(q * double(x.size() - 1) + 0.5)];
}

int usage() {
  std::fprintf(stderr,
               "usage: main attention <n> <rounds> <causal 0|1> <threads> [d]\n"
               "       main gemm <m> <rounds> [n k]\n"
               "       main packed <m> <rounds> [n k]\n"
               "       main split <m> <rounds> <d_model> <d_k>\n"
               "       main backward <n> <rounds> <causal 0|1> <threads> [d]\n"
               "       main mha <n> <rounds> <causal 0|1> <threads>\n"
               "       main decode <keys> <rounds> <heads> <kv_heads> <threads> [d]\n"
               "       (any of them may end with --peak)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_peak = argc > 1 && std::strcmp(argv[argc - 1], "--peak") == 0;
  if (with_peak) --argc;
  if (argc < 4) return usage();
  const bool split = std::strcmp(argv[1], "split") == 0;
  const bool packed = std::strcmp(argv[1], "packed") == 0;
  const bool gemm = split || packed || std::strcmp(argv[1], "gemm") == 0;
  const bool backward = std::strcmp(argv[1], "backward") == 0;
  const bool mha = std::strcmp(argv[1], "mha") == 0;
  const bool decode = std::strcmp(argv[1], "decode") == 0;
  if (!gemm && !backward && !mha && !decode && std::strcmp(argv[1], "attention") != 0)
    return usage();
  if ((split && argc < 6) || (decode && argc < 7)) return usage();
  const std::size_t n = std::strtoul(argv[2], nullptr, 10);
  const int rounds = std::atoi(argv[3]);
  const bool causal = !gemm && !decode && argc > 4 && std::atoi(argv[4]) != 0;
  const int threads = decode ? std::atoi(argv[6]) : !gemm && argc > 5 ? std::atoi(argv[5]) : 1;
  if (n == 0 || rounds < 2 || threads < 1) return usage();
  argus::set_num_threads(std::size_t(threads));

  // The decode workload's query heads and K/V heads (8 and 8 elsewhere).
  const std::size_t heads = decode ? std::strtoul(argv[4], nullptr, 10) : 8;
  const std::size_t kv_heads = decode ? std::strtoul(argv[5], nullptr, 10) : heads;
  if (heads == 0 || kv_heads == 0 || heads % kv_heads != 0) return usage();
  // The head width: the attention and backward workloads take it as a sixth argument, the
  // decode workload as a seventh.
  const int d_arg = decode ? 7 : 6;
  const std::size_t d = !gemm && !mha && argc > d_arg ? std::strtoul(argv[d_arg], nullptr, 10)
                        : decode                      ? 128
                                                      : 64;
  if (d == 0) return usage();
  (void)split_heads();  // ARGUS_AB_HEADS checked before the first round
  const std::size_t width = split ? std::strtoul(argv[4], nullptr, 10) : 512;
  const std::size_t d_k = split ? std::strtoul(argv[5], nullptr, 10) : 0;
  if (split && (width == 0 || d_k == 0 || width % d_k != 0)) return usage();
  // The gemm workload's B is (depth x cols): 512 x 512, or as its third and fourth arguments say.
  const bool shaped = gemm && !split && argc > 4;
  if (shaped && argc < 6) return usage();
  const std::size_t cols = shaped ? std::strtoul(argv[4], nullptr, 10) : width;
  const std::size_t depth = shaped ? std::strtoul(argv[5], nullptr, 10) : width;
  if (cols == 0 || depth == 0) return usage();
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  operand x, y, out_a, out_b, scratch_a, scratch_b;
  std::function<void(float*)> run_a, run_b;
  double flops;
  // The gemm, packed and split workloads' copies of B (ARGUS_AB_COPIES), taken in turn by every
  // call.
  std::vector<operand> b_rest;
  std::size_t b_turn = 0;
  const auto next_b = [&]() -> const float* {
    const std::size_t t = b_turn++ % (b_rest.size() + 1);
    return t == 0 ? y.data() : b_rest[t - 1].data();
  };
  const std::size_t ldb = gemm && !split ? b_row_stride(cols) : cols;
  // The decode workload's layers, and the next one each side's call takes: the two sides take
  // the same layers in the same order, so that neither reads memory the other does not (a 2 MiB
  // page that is not huge, a busier channel); one shared turn read as much as 7 % apart in an
  // A/A run of AVX2 kernels on the Zen 5 machine.
  std::size_t decode_layer_count = 0, decode_turn_a = 0, decode_turn_b = 0;
  if (gemm) {
    x.resize(n * depth), y.resize(depth * ldb), out_a.resize(n * cols);
    for (float& e : x) e = u(rng);
    for (float& e : y) e = u(rng);
    b_rest.assign(b_copies() - 1, y);
    if (split) {
      run_a = [&](float* c) { argus_ab_split_a(n, width, d_k, x.data(), next_b(), c); };
      run_b = [&](float* c) { argus_ab_split_b(n, width, d_k, x.data(), next_b(), c); };
    } else if (packed) {
      run_a = [&](float* c) { argus_ab_packed_a(n, cols, depth, ldb, x.data(), next_b(), c); };
      run_b = [&](float* c) { argus_ab_packed_b(n, cols, depth, ldb, x.data(), next_b(), c); };
    } else {
      run_a = [&](float* c) { argus_ab_gemm_a(n, cols, depth, ldb, x.data(), next_b(), c); };
      run_b = [&](float* c) { argus_ab_gemm_b(n, cols, depth, ldb, x.data(), next_b(), c); };
    }
    flops = 2.0 * double(n) * depth * cols;
  } else if (backward) {
    // x: Q, K, V, dO, then the forward's O and lse (A's kernels; both sides get the same).
    x.resize(5 * heads * n * d + heads * n), out_a.resize(3 * heads * n * d);
    for (float& e : x) e = u(rng);
    const float* q = x.data();
    const float* k = q + heads * n * d;
    const float* v = k + heads * n * d;
    const float* d_o = v + heads * n * d;
    float* o = x.data() + 4 * heads * n * d;
    float* lse = o + heads * n * d;
    argus_ab_forward_lse_a(n, heads, d, causal, q, k, v, o, lse);
    run_a = [=](float* g) { argus_ab_backward_a(n, heads, d, causal, q, k, v, o, lse, d_o, g); };
    run_b = [=](float* g) { argus_ab_backward_b(n, heads, d, causal, q, k, v, o, lse, d_o, g); };
    // The five products (S, dP, dV, dK, dQ), as bench_attention_backward counts them.
    flops = 10.0 * double(heads) * double(n) * double(n) * d * pair_share(n, causal);
  } else if (mha) {
    // x (n, 512), then W_Q, W_K, W_V, W_O (512 × 512 each, scaled so that the logits stay of
    // order one); each side its own scratch for Q, K, V and the merged heads.
    const std::size_t dm = heads * d;
    x.resize(n * dm + 4 * dm * dm), out_a.resize(n * dm);
    scratch_a.resize(4 * n * dm), scratch_b.resize(4 * n * dm);
    for (float& e : x) e = u(rng);
    for (std::size_t i = n * dm; i < x.size(); ++i) x[i] /= std::sqrt(float(dm));
    const float* xs = x.data();
    const float* w = xs + n * dm;
    run_a = [&, xs, w](float* o) {
      argus_ab_mha_a(n, heads, d, causal, xs, w, scratch_a.data(), o);
    };
    run_b = [&, xs, w](float* o) {
      argus_ab_mha_b(n, heads, d, causal, xs, w, scratch_b.data(), o);
    };
    // The four projections and the two products of the loop nest.
    flops = 8.0 * double(n) * dm * dm +
            4.0 * double(heads) * double(n) * double(n) * d * pair_share(n, causal);
  } else if (decode) {
    // x: the query (heads, d), then every layer's K (kv_heads, n, d), then every layer's V; the
    // layers are copies of the first, so that the two sides' outputs can be compared whichever
    // layer each call takes.
    const std::size_t per = kv_heads * n * d;
    decode_layer_count = decode_layers(2 * per * sizeof(float));
    x.resize(heads * d + 2 * decode_layer_count * per), out_a.resize(heads * d);
    for (std::size_t i = 0; i < heads * d + per; ++i) x[i] = u(rng);
    float* const k0 = x.data() + heads * d;
    float* const v0 = k0 + decode_layer_count * per;
    for (std::size_t i = 0; i < per; ++i) v0[i] = u(rng);
    for (std::size_t l = 1; l < decode_layer_count; ++l) {
      std::copy(k0, k0 + per, k0 + l * per);
      std::copy(v0, v0 + per, v0 + l * per);
    }
    const float* q = x.data();
    const std::size_t layers = decode_layer_count;
    run_a = [&, q, k0, v0, per, layers](float* o) {
      const std::size_t l = decode_turn_a++ % layers;
      argus_ab_decode_a(n, heads, kv_heads, d, q, k0 + l * per, v0 + l * per, o);
    };
    run_b = [&, q, k0, v0, per, layers](float* o) {
      const std::size_t l = decode_turn_b++ % layers;
      argus_ab_decode_b(n, heads, kv_heads, d, q, k0 + l * per, v0 + l * per, o);
    };
    flops = 4.0 * double(heads) * double(n) * d;
  } else {
    x.resize(3 * heads * n * d), out_a.resize(heads * n * d);
    for (float& e : x) e = u(rng);
    const float* q = x.data();
    const float* k = q + heads * n * d;
    const float* v = k + heads * n * d;
    run_a = [=](float* o) { argus_ab_attention_a(n, heads, d, causal, q, k, v, o); };
    run_b = [=](float* o) { argus_ab_attention_b(n, heads, d, causal, q, k, v, o); };
    flops = 4.0 * double(heads) * double(n) * double(n) * d * pair_share(n, causal);
  }
  out_b.resize(out_a.size());

  // Warm both (pool, scratch, caches), and compare their outputs.
  run_a(out_a.data());
  run_b(out_b.data());
  double max_diff = 0;
  for (std::size_t i = 0; i < out_a.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(out_a[i] - out_b[i])));

  // Repeat short calls so that one timing is at least ~10 ms.
  const auto time_once = [&](const std::function<void(float*)>& f, float* o, int reps) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f(o);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
               .count() /
           reps;
  };
  // The packed workload packs each copy of B at its first call: every copy packed for both
  // sides before anything is timed.
  if (packed)
    for (const auto* side : {&run_a, &run_b})
      for (std::size_t i = 0; i <= b_rest.size(); ++i) (*side)(out_a.data());
  const double probe = time_once(run_a, out_a.data(), 1);
  const int reps = std::max(1, int(std::ceil(10.0 / std::max(probe, 1e-3))));
  decode_turn_a = decode_turn_b = 0;

  std::vector<double> ta, tb, ratio, share_a, share_b, peaks;
  argus::bench::fma_peak peak{};
  for (int r = 0; r < rounds; ++r) {
    if (with_peak) {
      peak = argus::bench::measure_peak(threads);
      peaks.push_back(peak.gflops);
    }
    double a, b;
    if (r % 2 == 0) {
      a = time_once(run_a, out_a.data(), reps);
      b = time_once(run_b, out_b.data(), reps);
    } else {
      b = time_once(run_b, out_b.data(), reps);
      a = time_once(run_a, out_a.data(), reps);
    }
    ta.push_back(a), tb.push_back(b), ratio.push_back(a / b);
    if (with_peak) {
      share_a.push_back(100.0 * flops / a / 1e6 / peaks.back());
      share_b.push_back(100.0 * flops / b / 1e6 / peaks.back());
    }
  }
  if (split)
    std::printf("gemm_nn_split (m x %zu) . (%zu x %zu) into heads of %zu", width, width, width,
                d_k);
  else if (gemm)
    std::printf("gemm_nn (m x %zu) . (%zu x %zu)%s", depth, depth, cols,
                packed ? " on B packed once" : "");
  else if (decode)
    std::printf(
        "flash_attention decode h %zu over %zu K/V heads d %zu keys %zu, %.2f MiB of K "
        "and V a call in %zu layers' caches taken in turn",
        heads, kv_heads, d, n, 2.0 * double(kv_heads * n * d * sizeof(float)) / (1 << 20),
        decode_layer_count);
  else
    std::printf("%s %s",
                backward ? "flash_attention_backward"
                : mha    ? "mha forward (kernels)"
                         : "flash_attention",
                mha ? "d_model 512 h 8 d 64" : "h 8 d");
  if (ldb != cols) std::printf(", B's rows %zu apart", ldb);
  if (!b_rest.empty()) std::printf(", B in %zu copies taken in turn", b_rest.size() + 1);
  if (decode) {
    std::printf(", %d thread(s), %d rounds of %d call(s)\n", threads, rounds, reps);
  } else {
    if (!gemm && !mha) std::printf(" %zu", d);
    std::printf(" %s %zu%s", gemm ? "m" : "n", n, causal ? " causal" : "");
    if (causal && causal_window() != 0) std::printf(" window %zu", causal_window());
    if (!gemm && !mha && split_heads()) std::printf(", split heads (rows %zu apart)", heads * d);
    std::printf(", %d thread(s), %d rounds of %d call(s)\n", threads, rounds, reps);
  }
  std::printf("  A: median %.3f ms (min %.3f), %.1f GFLOP/s\n", quantile(ta, 0.5),
              *std::min_element(ta.begin(), ta.end()), flops / quantile(ta, 0.5) / 1e6);
  std::printf("  B: median %.3f ms (min %.3f), %.1f GFLOP/s\n", quantile(tb, 0.5),
              *std::min_element(tb.begin(), tb.end()), flops / quantile(tb, 0.5) / 1e6);
  if (decode) {
    const long huge = anon_huge_mib();
    if (huge >= 0)
      std::printf("  K/V caches %zu MiB; the process's memory on 2 MiB pages: %ld MiB\n",
                  2 * decode_layer_count * kv_heads * n * d * sizeof(float) >> 20, huge);
    const double bytes = 2.0 * double(kv_heads * n * d * sizeof(float));
    std::printf("  K and V read: A %.1f GB/s, B %.1f GB/s (medians)\n",
                bytes / quantile(ta, 0.5) / 1e6, bytes / quantile(tb, 0.5) / 1e6);
  }
  std::printf("  A / B time: median %.4f [quartiles %.4f, %.4f] (above 1: B is faster)\n",
              quantile(ratio, 0.5), quantile(ratio, 0.25), quantile(ratio, 0.75));
  if (with_peak) {
    std::printf(
        "  FMA peak (%s, %zu float lanes, %d thread(s)), measured every round: median "
        "%.1f GFLOP/s (min %.1f, max %.1f)\n",
        argus::kernel::isa_name(peak.instruction_set), peak.float_lanes, threads,
        quantile(peaks, 0.5), *std::min_element(peaks.begin(), peaks.end()),
        *std::max_element(peaks.begin(), peaks.end()));
    std::printf("  A: %% of its round's peak: median %.1f [quartiles %.1f, %.1f], best %.1f\n",
                quantile(share_a, 0.5), quantile(share_a, 0.25), quantile(share_a, 0.75),
                *std::max_element(share_a.begin(), share_a.end()));
    std::printf("  B: %% of its round's peak: median %.1f [quartiles %.1f, %.1f], best %.1f\n",
                quantile(share_b, 0.5), quantile(share_b, 0.25), quantile(share_b, 0.75),
                *std::max_element(share_b.begin(), share_b.end()));
  }
  std::printf("  max |A - B| over the output: %.3g\n", max_diff);
}
