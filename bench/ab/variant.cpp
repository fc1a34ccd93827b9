// bench/ab/variant.cpp -- one side of an A/B comparison (see ab.sh): the kernel entry points of
// one revision's headers, compiled into their own inline namespace (ab.sh renames
// ARGUS_KERNEL_ISA_NAMESPACE to argus_ab_a or argus_ab_b) and exported under C names, so that
// two revisions' kernels live in one program without clashing.
#include "argus/kernel/flash_attention.hpp"
#include "argus/kernel/flash_attention_backward.hpp"
#include "argus/kernel/gemm.hpp"
#include "argus/kernel/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <sys/mman.h>

#define ARGUS_AB_CAT2(a, b) a##b
#define ARGUS_AB_CAT(a, b) ARGUS_AB_CAT2(a, b)

namespace {
/// The problem of argus_ab_attention_* (h heads of n queries and n keys of width d, each (1, h,
/// n, d) contiguous, or with ARGUS_AB_HEADS=split (main.cpp checks it) (1, n, h, d): split-heads
/// views of a (1, n, h · d) matrix, rows h · d apart, as bench/'s BM_core lays them), writing
/// each row's log-sum-exp into lse (h, n).
argus::kernel::attention_problem<float> ab_problem(std::size_t n, std::size_t h, std::size_t d,
                                                   bool causal, const float* q, const float* k,
                                                   const float* v, float* o, float* lse) {
  argus::kernel::attention_problem<float> p{};
  p.batch = 1, p.heads = h, p.kv_heads = h, p.seq_q = n, p.seq_kv = n, p.d_k = d, p.d_v = d;
  const char* heads = std::getenv("ARGUS_AB_HEADS");
  const bool split = heads != nullptr && std::strcmp(heads, "split") == 0;
  const std::size_t head = split ? d : n * d, row = split ? h * d : d;
  p.q = q, p.q_batch = h * n * d, p.q_head = head, p.q_row = row;
  p.k = k, p.k_batch = h * n * d, p.k_head = head, p.k_row = row;
  p.v = v, p.v_batch = h * n * d, p.v_head = head, p.v_row = row;
  p.o = o, p.o_batch = h * n * d, p.o_head = head, p.o_row = row;
  p.lse = lse, p.lse_batch = h * n, p.lse_head = n;
  p.scale = 1.0f / std::sqrt(float(d));
  p.causal = causal;
  // ARGUS_AB_WINDOW=W: under causal, each query sees only its last W keys (main.cpp checks W).
  if (const char* w = std::getenv("ARGUS_AB_WINDOW"); causal && w != nullptr)
    p.causal_window = std::strtoul(w, nullptr, 10);
  return p;
}
}  // namespace

/// h heads of n queries and n keys of width d, each (1, h, n, d) contiguous; the problem is
/// built here, from this side's own attention_problem, so that the two sides may differ in it.
extern "C" void ARGUS_AB_CAT(argus_ab_attention_, ARGUS_AB_SIDE)(std::size_t n, std::size_t h,
                                                                 std::size_t d, bool causal,
                                                                 const float* q, const float* k,
                                                                 const float* v, float* o) {
  argus::kernel::flash_attention(ab_problem(n, h, d, causal, q, k, v, o, nullptr));
}

/// The forward of argus_ab_attention_* that also stores lse (h · n floats), for a backward.
extern "C" void ARGUS_AB_CAT(argus_ab_forward_lse_,
                             ARGUS_AB_SIDE)(std::size_t n, std::size_t h, std::size_t d,
                                            bool causal, const float* q, const float* k,
                                            const float* v, float* o, float* lse) {
  argus::kernel::flash_attention(ab_problem(n, h, d, causal, q, k, v, o, lse));
}

/// The fused backward of that forward (o, lse from it; d_o shaped as o): dQ, dK, dV written
/// one after the other into grads (3 · h · n · d floats).
extern "C" void ARGUS_AB_CAT(argus_ab_backward_,
                             ARGUS_AB_SIDE)(std::size_t n, std::size_t h, std::size_t d,
                                            bool causal, const float* q, const float* k,
                                            const float* v, const float* o, const float* lse,
                                            const float* d_o, float* grads) {
  argus::kernel::attention_backward_problem<float> bp{};
  bp.f = ab_problem(n, h, d, causal, q, k, v, const_cast<float*>(o), nullptr);
  bp.lse = lse, bp.d_o = d_o;
  bp.d_q = grads, bp.d_k = grads + h * n * d, bp.d_v = grads + 2 * h * n * d;
  argus::kernel::flash_attention_backward(bp);
}

extern "C" void ARGUS_AB_CAT(argus_ab_gemm_, ARGUS_AB_SIDE)(std::size_t m, std::size_t n,
                                                            std::size_t k, std::size_t ldb,
                                                            const float* a, const float* b,
                                                            float* c) {
  argus::kernel::gemm_nn<float>(m, n, k, 1.0f, a, k, b, ldb, c, n);
}

/// gemm_nn's product on B packed once, as argus::prepack packs a weight (pack_gemm_b, read by
/// gemm_nn_split_prepacked into one block): the first call for a B packs it, into storage on a
/// cache line (2 MiB and more: on huge pages where Linux allows, as argus's buffers) kept for
/// the program's life, one for each B (ARGUS_AB_COPIES: each copy packed once, the calls
/// taking them in turn as they take the copies of the gemm workload).
extern "C" void ARGUS_AB_CAT(argus_ab_packed_, ARGUS_AB_SIDE)(std::size_t m, std::size_t n,
                                                              std::size_t k, std::size_t ldb,
                                                              const float* a, const float* b,
                                                              float* c) {
  struct aligned_delete {
    std::size_t alignment;
    void operator()(float* p) const noexcept { ::operator delete (p, std::align_val_t{alignment}); }
  };
  static std::map<const float*, std::unique_ptr<float, aligned_delete>> packs;
  auto& panels = packs[b];
  if (!panels) {
    const std::size_t bytes = argus::kernel::gemm_packed_b_size<float>(k, n) * sizeof(float);
    const std::size_t alignment = bytes >= (std::size_t{2} << 20) ? std::size_t{2} << 20 : 64;
    panels = std::unique_ptr<float, aligned_delete>(
        static_cast<float*>(::operator new (bytes, std::align_val_t{alignment})),
        aligned_delete{alignment});
    if (alignment > 64) madvise(panels.get(), bytes / alignment * alignment, MADV_HUGEPAGE);
    argus::kernel::pack_gemm_b<float>(k, n, b, ldb, panels.get());
  }
  argus::kernel::gemm_nn_split_prepacked<float>(m, n, k, 1.0f, a, k, b, ldb, panels.get(),
                                                argus::kernel::gemm_panel_width<float>(), n, 0, c,
                                                n, n, 0, nullptr, false);
}

/// x (m x d) times W (d x d) written into split heads of width `block`: (d / block, m, block).
extern "C" void ARGUS_AB_CAT(argus_ab_split_, ARGUS_AB_SIDE)(std::size_t m, std::size_t d,
                                                             std::size_t block, const float* a,
                                                             const float* b, float* c) {
  argus::kernel::gemm_nn_split<float>(m, d, d, 1.0f, a, d, b, d, c, block, block, m * block);
}

/// One decode step: one query of h heads over kv_h K/V heads of `keys` keys of width d (grouped
/// query attention where kv_h < h), q and o (h, d), k and v (kv_h, keys, d), each contiguous, as
/// a model's K/V cache of one layer lies.
extern "C" void ARGUS_AB_CAT(argus_ab_decode_, ARGUS_AB_SIDE)(std::size_t keys, std::size_t h,
                                                              std::size_t kv_h, std::size_t d,
                                                              const float* q, const float* k,
                                                              const float* v, float* o) {
  argus::kernel::attention_problem<float> p{};
  p.batch = 1, p.heads = h, p.kv_heads = kv_h, p.seq_q = 1, p.seq_kv = keys, p.d_k = d, p.d_v = d;
  p.q = q, p.q_batch = h * d, p.q_head = d, p.q_row = d;
  p.k = k, p.k_batch = kv_h * keys * d, p.k_head = keys * d, p.k_row = d;
  p.v = v, p.v_batch = kv_h * keys * d, p.v_head = keys * d, p.v_row = d;
  p.o = o, p.o_batch = h * d, p.o_head = d, p.o_row = d;
  p.scale = 1.0f / std::sqrt(float(d));
  argus::kernel::flash_attention(p);
}

/// The fused MHA forward's kernels in the order the fused evaluator runs them (self-attention,
/// batch 1, h heads of width d, d_model = h · d, no bias): x (n, d_model) times W_Q, W_K, W_V
/// written straight into split heads (h, n, d) (gemm_nn_split), the loop nest on those heads
/// writing merged heads (n, d_model), then the output projection (gemm_nn). The products'
/// rows are cut into one block per thread, as the evaluator's split_product cuts a product of
/// so many rows. w: W_Q, W_K, W_V, W_O one after the other (d_model × d_model each); scratch:
/// 4 · n · d_model floats (Q, K, V, the merged heads); out (n, d_model).
extern "C" void ARGUS_AB_CAT(argus_ab_mha_, ARGUS_AB_SIDE)(std::size_t n, std::size_t h,
                                                           std::size_t d, bool causal,
                                                           const float* x, const float* w,
                                                           float* scratch, float* out) {
  const std::size_t dm = h * d, tasks = std::max<std::size_t>(1, argus::num_threads());
  const std::size_t per = (n + tasks - 1) / tasks;
  float* const q = scratch;  // (H,SEQ,D_K)
  float* const k = q + n * dm;
  float* const v = k + n * dm;
  float* const o = v + n * dm;  // (SEQ,D_MODEL)
  const auto by_rows = [&](auto&& f) {
    argus::kernel::parallel_for(tasks, [&](std::size_t t, std::size_t) {
      if (t * per < n) f(t * per, std::min(per, n - t * per));
    });
  };
  float* const heads[] = {q, k, v};
  by_rows([&](std::size_t r0, std::size_t m) {
    for (std::size_t j = 0; j < 3; ++j)
      argus::kernel::gemm_nn_split<float>(m, dm, dm, 1.0f, x + r0 * dm, dm, w + j * dm * dm, dm,
                                          heads[j] + r0 * d, d, d, n * d);
  });
  argus::kernel::attention_problem<float> p = ab_problem(n, h, d, causal, q, k, v, o, nullptr);
  p.o_batch = n * dm, p.o_head = d, p.o_row = dm;
  argus::kernel::flash_attention(p);
  by_rows([&](std::size_t r0, std::size_t m) {
    argus::kernel::gemm_nn<float>(m, dm, dm, 1.0f, o + r0 * dm, dm, w + 3 * dm * dm, dm,
                                  out + r0 * dm, dm);
  });
}
