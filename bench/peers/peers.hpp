// bench/peers/peers.hpp -- benchmark support: the libraries people use for attention on the
// CPU, as peers of argus's evaluators: oneDNN (onednn_attention.cpp) and libtorch
// (torch_attention.cpp).
//
// Each peer lives in its own translation unit, built only where the library is found
// (bench/CMakeLists.txt), so that neither library's headers nor its compile flags reach
// the other benchmark TUs. This header is their whole interface: plain pointers and
// extents, no argus, no oneDNN, no libtorch. A peer that is built defines
// ARGUS_BENCH_HAVE_ONEDNN or ARGUS_BENCH_HAVE_TORCH (as 1) in the programs that use it;
// where it is not, its functions below return an empty peer_call and its rows are not
// registered (attention_support.hpp: peer_evaluators()). oneDNN is linked; libtorch is loaded
// at run time (peer_functions below says why).
//
// Layouts, the same as the argus rows hand them over:
//   core: q (batch, heads, seq_q, d_k), k and v (batch, heads, seq_kv, d_k), o like q, all
//         contiguous (row-major); o = softmax(q·kᵀ / √d_k)·v, head by head.
//   MHA:  x_q (batch, seq_q, d_model), x_kv (batch, seq_kv, d_model), out like x_q; the
//         weights x-times-W as argus stores them: w_q, w_k, w_v (d_model, d_model) = (in,
//         heads·d_k), w_o (heads·d_k, d_model), biases (d_model); d_k = d_model / heads.
#pragma once

#if ARGUS_BENCH_HAVE_TORCH
#include <dlfcn.h>
#endif

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace argus::bench::peers {

/// One attention call, prepared outside the timed loop: primitives built, weights loaded,
/// memory allocated, the thread count set. run() is the timed forward; output() is where its
/// result lies afterwards (the caller's `o`/`out`, or the peer's own tensor). Empty (no run)
/// when the peer is not built, with the reason in `description` where there is one.
struct peer_call {
  std::function<void()> run;
  std::function<const float*()> output;
  /// The buffers the peer allocates besides its inputs and its output, in bytes (what
  /// argus's explain(...).materialised_bytes() counts): see each peer's file.
  double bytes_materialised = 0;
  /// How the peer was set up, in words (threads, BLAS, algorithm), for the report.
  std::string description;
  std::shared_ptr<void> state;  // owns whatever run() uses
};

struct core_problem {
  std::size_t batch, heads, seq_q, seq_kv, d_k;
  const float *q, *k, *v;
  float* o;
  /// (seq_q, seq_kv), added to every head's scaled scores (PyTorch's float attn_mask), or
  /// null.
  const float* additive = nullptr;
  /// The causal mask, query i seeing keys j <= i (seq_q == seq_kv): libtorch's is_causal,
  /// oneDNN's binary_add post-op of band_mask(seq_q, seq_kv, seq_kv). Not together with
  /// `additive` (a row whose mask has both passes their sum as `additive`): a peer refuses
  /// such a problem (mask_conflict).
  bool causal = false;
};

/// (seq_q, seq_kv) floats for seq_q == seq_kv, 0 where query i sees key j, i - window < j <=
/// i, and -inf elsewhere: a sliding window as an additive mask (window seq_kv: the causal mask).
inline std::vector<float> band_mask(std::size_t seq_q, std::size_t seq_kv, std::size_t window) {
  std::vector<float> m(seq_q * seq_kv, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < seq_q && i < seq_kv; ++i) {
    const std::size_t seen = std::min(i + 1, window);
    std::fill_n(m.begin() + std::ptrdiff_t(i * seq_kv + i + 1 - seen), seen, 0.0f);
  }
  return m;
}

/// The refusal of a core_problem with both masks set (its run empty, the reason in its
/// description), or an empty call where the problem is well-formed.
inline peer_call mask_conflict(const core_problem& p) {
  peer_call refused;
  if (p.causal && p.additive != nullptr)
    refused.description = "core_problem sets both causal and additive: pass their sum as additive";
  return refused;
}

struct mha_problem {
  std::size_t batch, seq_q, seq_kv, d_model, heads;
  const float *x_q, *x_kv;  // x_kv == x_q for self-attention
  const float *w_q, *w_k, *w_v, *w_o;
  const float *b_q, *b_k, *b_v, *b_o;
  float* out;
};

#if ARGUS_BENCH_HAVE_ONEDNN
/// oneDNN: per (batch, head) a matmul primitive for the scores (the 1/√d_k scale as its
/// output-scale attribute), a softmax primitive in place, a matmul for P·V.
peer_call onednn_core(const core_problem& p, int threads);
/// oneDNN: the four projections as matmul primitives with bias, then the core as above on
/// the heads' columns of Q, K and V, writing the heads' columns of the concatenation.
peer_call onednn_mha(const mha_problem& p, int threads);
#else
inline peer_call onednn_core(const core_problem&, int) { return {}; }
inline peer_call onednn_mha(const mha_problem&, int) { return {}; }
#endif

/// The libtorch peer's entry points. It is built as a module (libargus_bench_torch.so) that a
/// program loads (dlopen) when a torch row first runs, not linked: loading libtorch makes some
/// 150 MiB resident (its operator registry), which would otherwise count in the peak RSS of
/// every row of the program. The programs register the peer rows last, so that only they run
/// with libtorch loaded.
struct peer_functions {
  peer_call (*core)(const core_problem&, int threads);
  peer_call (*mha)(const mha_problem&, int threads);
  peer_call (*mha_native)(const mha_problem&, int threads);
};

#if ARGUS_BENCH_HAVE_TORCH
namespace detail {
/// The module's functions, loaded once; null, with the reason in `error`, when it fails to load.
inline const peer_functions* torch_module(std::string& error) {
  static std::string reason;
  static const peer_functions* functions = []() -> const peer_functions* {
    void* module = dlopen(ARGUS_BENCH_TORCH_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      reason = dlerror();
      return nullptr;
    }
    auto* get =
        reinterpret_cast<void (*)(peer_functions*)>(dlsym(module, "argus_bench_torch_functions"));
    if (get == nullptr) {
      reason = dlerror();
      return nullptr;
    }
    static peer_functions f{};
    get(&f);
    return &f;
  }();
  error = reason;
  return functions;
}
}  // namespace detail

/// libtorch: its scaled-dot-product attention (at::_scaled_dot_product_attention in 1.13,
/// at::scaled_dot_product_attention from 2.0).
inline peer_call torch_core(const core_problem& p, int threads) {
  peer_call none;
  const peer_functions* f = detail::torch_module(none.description);
  return f ? f->core(p, threads) : none;
}
/// libtorch: torch::nn::MultiheadAttention::forward(x, x, x), need_weights = false.
inline peer_call torch_mha(const mha_problem& p, int threads) {
  peer_call none;
  const peer_functions* f = detail::torch_module(none.description);
  return f ? f->mha(p, threads) : none;
}
/// libtorch: at::_native_multi_head_attention, the fused inference path of
/// nn.MultiheadAttention (what Python's module runs in eval() mode), same weights.
inline peer_call torch_mha_native(const mha_problem& p, int threads) {
  peer_call none;
  const peer_functions* f = detail::torch_module(none.description);
  return f ? f->mha_native(p, threads) : none;
}
#else
inline peer_call torch_core(const core_problem&, int) { return {}; }
inline peer_call torch_mha(const mha_problem&, int) { return {}; }
inline peer_call torch_mha_native(const mha_problem&, int) { return {}; }
#endif

}  // namespace argus::bench::peers
