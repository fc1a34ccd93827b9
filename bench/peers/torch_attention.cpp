// bench/peers/torch_attention.cpp -- benchmark support: the libtorch peer of argus's attention
// (peers.hpp has the interface). Built as a module that the benchmark programs load when a
// torch row first runs (peers.hpp: peer_functions).
//
// libtorch's C++ API as a user writes inference with it: torch::NoGradGuard, the module in
// eval() mode, torch::set_num_threads(threads) once per row, inputs wrapped without a copy
// (torch::from_blob over the caller's buffers).
//
//   core  at::_scaled_dot_product_attention(q, k, v) on (batch, heads, seq, d_k) tensors: the
//         scaled-dot-product attention libtorch 1.13 ships (public as
//         torch::nn::functional::scaled_dot_product_attention only from 2.0); need_attn_weights
//         false, no dropout, the additive mask (core_problem::additive) as a float attn_mask of
//         (seq_q, seq_kv), broadcast over batch and heads, or none; is_causal for the causal
//         mask (core_problem::causal). From libtorch 2.0 on (where the 1.13 operator is gone),
//         at::scaled_dot_product_attention(q, k, v), which runs its fused CPU kernel (a
//         FlashAttention-style loop nest) where the inputs allow. Its result is a new tensor,
//         which output() returns.
//   MHA   torch::nn::MultiheadAttention(d_model, heads), bias on, loaded with argus's weights
//         (in_proj_weight = [W_qᵀ; W_kᵀ; W_vᵀ], in_proj_bias = [b_q; b_k; b_v],
//         out_proj = (W_oᵀ, b_o)), forward(x, x, x, {}, need_weights = false): the same
//         tensor as query, key and value for self-attention, which lets libtorch project Q, K
//         and V with one matmul. The C++ module has no batch_first: x (batch, seq, d_model) is
//         passed as its (seq, batch, d_model) transpose, a view (no copy at batch 1).
//   MHA, native  (the row torch_native) at::_native_multi_head_attention with the same module's
//         weights, on x (batch, seq, d_model) as it is, need_weights = false: the fused
//         inference path ("BetterTransformer", libtorch 1.12 on) that Python's
//         nn.MultiheadAttention takes in eval() mode when its inputs allow (batch_first, no
//         weights asked for, no grad), and that the C++ module's forward() never takes: one
//         product for Q, K and V, then the scaled-dot-product attention (from 2.0 the same fused
//         kernel as the core row), then the output projection.
//
// bytes_materialised: the high-water mark of the bytes libtorch holds through its CPU
// allocator during one call (a counting allocator installed with c10::SetCPUAllocator
// forwards to the default one), less the result tensor: the same thing argus's
// materialised_bytes() counts. Allocations that bypass that allocator (BLAS workspaces) are
// not counted.
//
// CPU matrix products in Debian's libtorch go to the system BLAS (libblas.so.3, chosen by
// update-alternatives); with the reference BLAS (package libblas3) they are some ten times
// slower than with OpenBLAS. The row's label names the library in use, and `make bench`
// installs libopenblas0-openmp (OpenMP, the threading libtorch uses).
#include "peers.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#else
#include <ATen/ops/_scaled_dot_product_attention.h>
#endif
#include <ATen/ops/_native_multi_head_attention.h>
#include <algorithm>
#include <atomic>
#include <c10/core/CPUAllocator.h>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <string>
#include <torch/nn/modules/activation.h>
#include <torch/utils.h>

namespace argus::bench::peers {

namespace {

/// Counts the bytes allocated through it and their high-water mark; forwards to `base`.
/// c10::Allocator's interface changed within libtorch 2: allocate() lost its const, and
/// copy_data() became pure virtual. Both spellings of allocate() are defined and neither says
/// `override`, so whichever the installed libtorch declares is the one that overrides (the
/// other is an ordinary member), and copy_data() is a plain member where the base has none.
class counting_allocator final : public c10::Allocator {
 public:
  explicit counting_allocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(std::size_t n) const { return count(base_->allocate(n), n); }
  c10::DataPtr allocate(std::size_t n) { return count(base_->allocate(n), n); }
  void copy_data(void* dest, const void* src, std::size_t bytes) const {
    std::memcpy(dest, src, bytes);
  }

  /// Starts a new high-water mark at the bytes live now; returns them.
  std::int64_t restart() {
    peak_ = live_.load();
    return peak_;
  }
  std::int64_t peak() const { return peak_; }

 private:
  c10::DataPtr count(c10::DataPtr inner, std::size_t n) const {
    void* data = inner.get();
    auto* record = new allocation{std::move(inner), n, this};
    const std::int64_t now = live_ += std::int64_t(n);
    for (std::int64_t p = peak_.load(); now > p && !peak_.compare_exchange_weak(p, now);) {
    }
    return {data, record, &release, c10::Device(c10::DeviceType::CPU)};
  }
  struct allocation {
    c10::DataPtr inner;
    std::size_t bytes;
    const counting_allocator* owner;
  };
  static void release(void* p) {
    auto* record = static_cast<allocation*>(p);
    record->owner->live_ -= std::int64_t(record->bytes);
    delete record;  // frees `inner` through the base allocator
  }

  c10::Allocator* base_;
  mutable std::atomic<std::int64_t> live_{0}, peak_{0};
};

counting_allocator& allocator() {
  static counting_allocator* a = [] {
    auto* c = new counting_allocator(c10::GetDefaultCPUAllocator());  // lives as long as torch
    c10::SetCPUAllocator(c, /*priority=*/1);
    return c;
  }();
  return *a;
}

/// Where the BLAS is OpenBLAS built for several CPUs (Debian's is): ", its <core> kernels", the
/// kernel set it chose for this CPU, or OPENBLAS_CORETYPE's. A CPU newer than the OpenBLAS
/// release gets an old set: 0.3.21 runs its SSE3 kernels ("Prescott") on an Intel Xeon of
/// family 6 model 207 (Emerald Rapids), where the MHA row at n 1024 took 225-310 ms with them,
/// 174 ms with its Haswell kernels and 85 ms with its SkylakeX ones (docs/performance.md), so
/// the words then say so and how to choose another.
std::string openblas_core_words() {
  using corename_fn = char* (*)();
  auto* corename = reinterpret_cast<corename_fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (corename == nullptr || corename() == nullptr) return {};
  const std::string core = corename();
  std::string words = ", its " + core + " kernels";
  std::string lower = core;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool old_set = lower == "prescott" || lower == "core2" || lower == "penryn" ||
                       lower == "dunnington" || lower == "nehalem" || lower == "atom" ||
                       lower == "katmai" || lower == "coppermine" || lower == "northwood" ||
                       lower == "banias" || lower == "opteron" || lower == "opteron_sse3" ||
                       lower == "barcelona" || lower == "nano" || lower == "sandybridge";
#if defined(__x86_64__) || defined(__i386__)
  if (old_set && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const bool avx512 = __builtin_cpu_supports("avx512f");
    words += std::string(" (an older CPU's: this OpenBLAS does not know this one, which has ") +
             (avx512 ? "AVX-512" : "AVX2") +
             "; OPENBLAS_CORETYPE=" + (avx512 ? "SkylakeX" : "Haswell") +
             " chooses kernels that use it)";
  }
#else
  (void)old_set;
#endif
  return words;
}

/// The BLAS library libtorch's matrix products resolve to, by the directory Debian's
/// alternatives keep it in ("openblas-openmp", "blis-pthread", ...; "blas" is the reference),
/// or else by the file that defines it (PyPI's libtorch links MKL into libtorch_cpu.so).
std::string blas_words() {
  // sgemm_, the Fortran BLAS entry point libtorch calls, names the library it comes from.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || dladdr(sgemm, &info) == 0 || info.dli_fname == nullptr)
    return "BLAS unknown";
  std::string path = info.dli_fname;
  if (char* r = realpath(path.c_str(), nullptr)) {
    path = r;
    free(r);
  }
  const auto slash = path.rfind('/');
  const auto dir = path.rfind('/', slash == 0 ? 0 : slash - 1);
  if (slash == std::string::npos || dir == std::string::npos) return "BLAS " + path;
  const std::string file = path.substr(slash + 1);
  if (file.rfind("libblas.so", 0) != 0)  // not an alternative
    return "BLAS in " + file + openblas_core_words();
  const std::string name = path.substr(dir + 1, slash - dir - 1);
  return "BLAS " + name + (name == "blas" ? " (the reference BLAS: slow)" : "") +
         openblas_core_words();
}

std::string setup_words(int threads) {
  torch::set_num_threads(threads);
  return "libtorch " + std::to_string(TORCH_VERSION_MAJOR) + "." +
         std::to_string(TORCH_VERSION_MINOR) + ", set_num_threads(" +
         std::to_string(at::get_num_threads()) + "), " + blas_words();
}

at::Tensor wrap(const float* p, at::IntArrayRef sizes) {
  return torch::from_blob(const_cast<float*>(p), sizes, torch::kFloat32);  // read only
}

/// bytes_materialised: runs `run` once and returns the allocator's high-water mark over the
/// bytes live before it, less the result's bytes.
template <class Run>
double measure_bytes(Run&& run, std::size_t result_bytes) {
  const std::int64_t before = allocator().restart();
  run();
  return double(
      std::max<std::int64_t>(allocator().peak() - before - std::int64_t(result_bytes), 0));
}

peer_call core(const core_problem& p, int threads) {
  if (peer_call refused = mask_conflict(p); !refused.description.empty()) return refused;
  struct state {
    at::Tensor q, k, v, o;
    c10::optional<at::Tensor> mask;  // the float attn_mask, broadcast over batch and heads
  };
  (void)allocator();
  torch::NoGradGuard no_grad;
  auto st = std::make_shared<state>();
  const auto b = int64_t(p.batch), h = int64_t(p.heads), d = int64_t(p.d_k);
  st->q = wrap(p.q, {b, h, int64_t(p.seq_q), d});
  st->k = wrap(p.k, {b, h, int64_t(p.seq_kv), d});
  st->v = wrap(p.v, {b, h, int64_t(p.seq_kv), d});
  if (p.additive != nullptr) st->mask = wrap(p.additive, {int64_t(p.seq_q), int64_t(p.seq_kv)});
  peer_call call;
#if TORCH_VERSION_MAJOR >= 2
  call.description = setup_words(threads) + ", scaled_dot_product_attention";
#else
  call.description = setup_words(threads) + ", _scaled_dot_product_attention";
#endif
  if (p.additive != nullptr) call.description += ", a float attn_mask";
  if (p.causal) call.description += ", is_causal";
  call.run = [s = st.get(), causal = p.causal] {
    torch::NoGradGuard no_grad;
    s->o.reset();  // the previous result, freed before the call as a user's loop would
#if TORCH_VERSION_MAJOR >= 2
    s->o = at::scaled_dot_product_attention(s->q, s->k, s->v, s->mask, 0.0, causal);
#else
    s->o = std::get<0>(
        at::_scaled_dot_product_attention(s->q, s->k, s->v, s->mask, 0.0, false, causal));
#endif
  };
  call.bytes_materialised = measure_bytes(call.run, p.batch * p.heads * p.seq_q * p.d_k * 4);
  call.output = [s = st.get()] {
    s->o = s->o.contiguous();
    return static_cast<const float*>(s->o.data_ptr<float>());
  };
  call.state = st;
  return call;
}

/// torch::nn::MultiheadAttention(d_model, heads) in eval() mode, loaded with p's weights.
torch::nn::MultiheadAttention loaded_module(const mha_problem& p) {
  const auto dm = int64_t(p.d_model);
  torch::nn::MultiheadAttention m(torch::nn::MultiheadAttentionOptions(dm, int64_t(p.heads)));
  m->eval();
  // argus stores x·W (in, out); torch's Linear stores W (out, in).
  const auto t = [dm](const float* w) { return wrap(w, {dm, dm}).t(); };
  m->in_proj_weight.copy_(torch::cat({t(p.w_q), t(p.w_k), t(p.w_v)}, 0));
  m->in_proj_bias.copy_(torch::cat({wrap(p.b_q, {dm}), wrap(p.b_k, {dm}), wrap(p.b_v, {dm})}));
  m->out_proj->weight.copy_(t(p.w_o));
  m->out_proj->bias.copy_(wrap(p.b_o, {dm}));
  return m;
}

peer_call mha(const mha_problem& p, int threads) {
  struct state {
    torch::nn::MultiheadAttention mha{nullptr};
    at::Tensor x_q, x_kv, out, out_batch_major;
    bool self = false;
  };
  (void)allocator();
  torch::NoGradGuard no_grad;
  auto st = std::make_shared<state>();
  const auto dm = int64_t(p.d_model), b = int64_t(p.batch);
  st->mha = loaded_module(p);
  st->self = p.x_kv == p.x_q;
  st->x_q = wrap(p.x_q, {b, int64_t(p.seq_q), dm}).transpose(0, 1);  // (SEQ_Q,B,D_MODEL) view
  st->x_kv = st->self ? st->x_q : wrap(p.x_kv, {b, int64_t(p.seq_kv), dm}).transpose(0, 1);
  peer_call call;
  call.description = setup_words(threads) + ", nn::MultiheadAttention";
  call.run = [s = st.get()] {
    torch::NoGradGuard no_grad;
    s->out.reset();
    s->out = std::get<0>(s->mha->forward(s->x_q, s->x_kv, s->x_kv, {}, /*need_weights=*/false));
  };
  call.bytes_materialised = measure_bytes(call.run, p.batch * p.seq_q * p.d_model * 4);
  call.output = [s = st.get()] {
    s->out_batch_major = s->out.transpose(0, 1).contiguous();  // (B,SEQ_Q,D_MODEL)
    return static_cast<const float*>(s->out_batch_major.data_ptr<float>());
  };
  call.state = st;
  return call;
}

peer_call mha_native(const mha_problem& p, int threads) {
  struct state {
    torch::nn::MultiheadAttention mha{nullptr};
    at::Tensor x_q, x_kv, out;
  };
  (void)allocator();
  torch::NoGradGuard no_grad;
  auto st = std::make_shared<state>();
  const auto dm = int64_t(p.d_model), b = int64_t(p.batch);
  st->mha = loaded_module(p);
  st->x_q = wrap(p.x_q, {b, int64_t(p.seq_q), dm});  // batch first, as the native path takes it
  st->x_kv = p.x_kv == p.x_q ? st->x_q : wrap(p.x_kv, {b, int64_t(p.seq_kv), dm});
  peer_call call;
  call.description = setup_words(threads) + ", _native_multi_head_attention";
  call.run = [s = st.get(), dm, h = int64_t(p.heads)] {
    torch::NoGradGuard no_grad;
    s->out.reset();
    const auto& m = *s->mha;
    s->out = std::get<0>(at::_native_multi_head_attention(
        s->x_q, s->x_kv, s->x_kv, dm, h, m.in_proj_weight, m.in_proj_bias, m.out_proj->weight,
        m.out_proj->bias, {}, /*need_weights=*/false));
  };
  call.bytes_materialised = measure_bytes(call.run, p.batch * p.seq_q * p.d_model * 4);
  call.output = [s = st.get()] {
    s->out = s->out.contiguous();
    return static_cast<const float*>(s->out.data_ptr<float>());
  };
  call.state = st;
  return call;
}

}  // namespace
}  // namespace argus::bench::peers

/// The module's one exported symbol: the programs find the entry points through it (peers.hpp).
extern "C" __attribute__((visibility("default"))) void argus_bench_torch_functions(
    argus::bench::peers::peer_functions* f) {
  f->core = &argus::bench::peers::core;
  f->mha = &argus::bench::peers::mha;
  f->mha_native = &argus::bench::peers::mha_native;
}
