// bench/peers/onednn_attention.cpp -- benchmark support: the oneDNN peer of argus's attention
// (peers.hpp has the interface).
//
// Written as oneDNN's documentation asks of inference code: every primitive is created once,
// outside the timed loop, and executed many times; memory objects wrap the caller's buffers
// (no copies); the constant weights of the projections are declared with format_tag::any and
// reordered once into the layout the matmul prefers; one user-managed scratchpad serves every
// primitive (they run one after another on one stream).
//
//   core  per (batch, head): S = Q_h·K_hᵀ (matmul, K_hᵀ a transposed strided view of K, the
//         1/√d_k scale as the output-scale attribute), softmax over the rows of S in place
//         (softmax_forward, forward_inference), O_h = S·V_h (matmul) into the head's block of
//         the output. One S of (seq_q × seq_kv) floats, reused by every head; each primitive
//         is threaded inside. An additive mask (core_problem::additive, PyTorch's float
//         attn_mask) is a binary_add post-op of the first matmul, after its output scale; the
//         causal mask (core_problem::causal) the same post-op of a 0 / -inf matrix made once.
//   MHA   Q = x_q·W_q + b_q, K, V likewise from x_kv, each one matmul primitive with a bias
//         over all rows; the core as above on the heads' column blocks of Q, K, V (rows
//         d_model apart), writing the heads' column blocks of the concatenation C; then
//         out = C·W_o + b_o. Q, K, V and C are allocated once, when the call is prepared.
//
// bytes_materialised counts S, the scratchpad, and for the MHA Q, K, V, C and any weights the
// reorder copied.
//
// Threads: Debian's libdnnl is built with the OpenMP runtime (DNNL_CPU_THREADING_RUNTIME
// OMP), whose thread count is the calling thread's OpenMP setting: omp_set_num_threads(threads)
// when the call is prepared, once per row.
#include "peers.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace argus::bench::peers {

namespace {

using dnnl::memory;
using dims = memory::dims;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

memory::dim dim(std::size_t n) { return memory::dim(n); }

/// A 2-d f32 matrix of `rows` × `cols` whose rows are `row_stride` floats apart; with
/// `transposed`, the (cols × rows) matrix read column by column (Kᵀ from K).
memory::desc matrix(std::size_t rows, std::size_t cols, std::size_t row_stride,
                    bool transposed = false) {
  if (transposed) return memory::desc({dim(cols), dim(rows)}, f32, dims{1, dim(row_stride)});
  return memory::desc({dim(rows), dim(cols)}, f32, dims{dim(row_stride), 1});
}

std::string threading_words(int threads) {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  omp_set_num_threads(threads);
  return "omp_set_num_threads(" + std::to_string(threads) + ")";
#else
  (void)threads;
  return "not OpenMP: the library's default thread count";
#endif
}

/// What every prepared call shares: the engine, the stream, one scratchpad.
struct context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::size_t scratch_bytes = 0;
  memory scratch;

  /// A new attribute with a user-managed scratchpad (primitive_attr is a handle: copies
  /// share one attribute, so each primitive gets its own).
  static dnnl::primitive_attr attr() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
  }
  template <class PD>
  PD need(PD pd) {
    scratch_bytes = std::max(scratch_bytes, pd.scratchpad_desc().get_size());
    return pd;
  }
  void allocate_scratch() {
    scratch = memory(
        memory::desc({dim(std::max<std::size_t>(scratch_bytes, 1))}, memory::data_type::u8, tag::a),
        engine);
  }
  memory wrap(const memory::desc& md, const float* p) {
    return memory(md, engine, const_cast<float*>(p));  // read only: a source or weights
  }
};

/// The core on per-head strided blocks: heads[i] gives the pointers of (batch, head) pair i.
struct head_core {
  struct pointers {
    const float *q, *k, *v;
    float* o;
  };
  dnnl::matmul scores, pv;
  dnnl::softmax_forward softmax;
  memory s;     // (SEQ_Q,SEQ_KV): the scores of one head
  memory bias;  // (SEQ_Q,SEQ_KV) added to the scaled scores (a binary post-op), or empty
  struct head_memory {
    memory q, kt, v, o;
  };
  std::vector<head_memory> heads;

  /// Rows of Q, K, V, O are q_row, k_row, v_row, o_row floats apart; `additive`, where not
  /// null, (seq_q, seq_kv) added to every head's scaled scores.
  head_core(context& c, std::size_t seq_q, std::size_t seq_kv, std::size_t d_k, std::size_t q_row,
            std::size_t k_row, std::size_t v_row, std::size_t o_row,
            const std::vector<pointers>& ptrs, const float* additive = nullptr) {
    const auto q_md = matrix(seq_q, d_k, q_row);
    const auto kt_md = matrix(seq_kv, d_k, k_row, /*transposed=*/true);  // (D_K,SEQ_KV)
    const auto s_md = memory::desc({dim(seq_q), dim(seq_kv)}, f32, tag::ab);
    const auto v_md = matrix(seq_kv, d_k, v_row);
    const auto o_md = matrix(seq_q, d_k, o_row);
    dnnl::primitive_attr scaled = context::attr();
    scaled.set_output_scales(0, {1.0f / std::sqrt(float(d_k))});
    if (additive != nullptr) {  // applied after the output scale
      dnnl::post_ops add;
      add.append_binary(dnnl::algorithm::binary_add, s_md);
      scaled.set_post_ops(add);
      bias = c.wrap(s_md, additive);
    }
    scores =
        dnnl::matmul(c.need(dnnl::matmul::primitive_desc({q_md, kt_md, s_md}, scaled, c.engine)));
    softmax = dnnl::softmax_forward(c.need(dnnl::softmax_forward::primitive_desc(
        {dnnl::prop_kind::forward_inference, s_md, 1}, context::attr(), c.engine)));
    pv = dnnl::matmul(
        c.need(dnnl::matmul::primitive_desc({s_md, v_md, o_md}, context::attr(), c.engine)));
    s = memory(s_md, c.engine);
    for (const pointers& p : ptrs)
      heads.push_back(
          {c.wrap(q_md, p.q), c.wrap(kt_md, p.k), c.wrap(v_md, p.v), memory(o_md, c.engine, p.o)});
  }
  double bytes() const { return double(s.get_desc().get_size()); }

  void run(context& c) {
    for (head_memory& h : heads) {
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, h.q},
                                           {DNNL_ARG_WEIGHTS, h.kt},
                                           {DNNL_ARG_DST, s},
                                           {DNNL_ARG_SCRATCHPAD, c.scratch}};
      if (bias) args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, bias});
      scores.execute(c.stream, args);
      softmax.execute(c.stream,
                      {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, s}, {DNNL_ARG_SCRATCHPAD, c.scratch}});
      pv.execute(c.stream, {{DNNL_ARG_SRC, s},
                            {DNNL_ARG_WEIGHTS, h.v},
                            {DNNL_ARG_DST, h.o},
                            {DNNL_ARG_SCRATCHPAD, c.scratch}});
    }
  }
};

/// out (rows, n) = x (rows, k)·w (k, n) + b, one matmul primitive; w is reordered once into the
/// layout the primitive chose (format_tag::any) when that differs from row-major.
struct projection {
  dnnl::matmul mm;
  memory x, w, b, out;
  double copied_bytes = 0;

  projection(context& c, std::size_t rows, std::size_t k, std::size_t n, const float* x_,
             const float* w_, const float* b_, float* out_) {
    const auto x_md = memory::desc({dim(rows), dim(k)}, f32, tag::ab);
    const auto w_user = memory::desc({dim(k), dim(n)}, f32, tag::ab);
    const auto w_any = memory::desc({dim(k), dim(n)}, f32, tag::any);
    const auto b_md = memory::desc({1, dim(n)}, f32, tag::ab);
    const auto o_md = memory::desc({dim(rows), dim(n)}, f32, tag::ab);
    const auto pd =
        c.need(dnnl::matmul::primitive_desc({x_md, w_any, b_md, o_md}, context::attr(), c.engine));
    mm = dnnl::matmul(pd);
    x = c.wrap(x_md, x_);
    b = c.wrap(b_md, b_);
    out = memory(o_md, c.engine, out_);
    memory user = c.wrap(w_user, w_);
    if (pd.weights_desc() == w_user) {
      w = user;
    } else {
      w = memory(pd.weights_desc(), c.engine);
      dnnl::reorder(user, w).execute(c.stream, user, w);
      c.stream.wait();
      copied_bytes = double(pd.weights_desc().get_size());
    }
  }
  void run(context& c) {
    mm.execute(c.stream, {{DNNL_ARG_SRC, x},
                          {DNNL_ARG_WEIGHTS, w},
                          {DNNL_ARG_BIAS, b},
                          {DNNL_ARG_DST, out},
                          {DNNL_ARG_SCRATCHPAD, c.scratch}});
  }
};

std::string version_words() {
  const dnnl_version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

}  // namespace

peer_call onednn_core(const core_problem& p, int threads) {
  if (peer_call refused = mask_conflict(p); !refused.description.empty()) return refused;
  struct state {
    context c;
    std::unique_ptr<head_core> core;
    std::vector<float> causal;  // (SEQ_Q,SEQ_KV): 0 where a key is visible, -inf above the diagonal
  };
  auto st = std::make_shared<state>();
  const std::string words = threading_words(threads);
  const std::size_t d = p.d_k;
  std::vector<head_core::pointers> ptrs;
  for (std::size_t b = 0; b < p.batch; ++b)
    for (std::size_t h = 0; h < p.heads; ++h) {
      const std::size_t bh = b * p.heads + h;
      ptrs.push_back({p.q + bh * p.seq_q * d, p.k + bh * p.seq_kv * d, p.v + bh * p.seq_kv * d,
                      p.o + bh * p.seq_q * d});
    }
  // oneDNN 2.6's primitives have no causal mask (its graph API's SDPA pattern came later):
  // a user adds one as the bias of the scores' matmul, as for any other mask.
  const float* additive = p.additive;
  if (p.causal) {
    st->causal = band_mask(p.seq_q, p.seq_kv, p.seq_kv);
    additive = st->causal.data();
  }
  st->core = std::make_unique<head_core>(st->c, p.seq_q, p.seq_kv, d, d, d, d, d, ptrs, additive);
  st->c.allocate_scratch();
  peer_call call;
  call.bytes_materialised = st->core->bytes() + double(st->c.scratch_bytes);
  call.description = version_words() + ", " + words +
                     (p.causal ? ", the causal mask (0 / -inf) as a binary_add post-op"
                      : p.additive != nullptr ? ", attn_mask as a binary_add post-op"
                                              : "");
  call.run = [s = st.get()] {
    s->core->run(s->c);
    s->c.stream.wait();
  };
  call.output = [o = p.o] { return static_cast<const float*>(o); };
  call.state = st;
  return call;
}

peer_call onednn_mha(const mha_problem& p, int threads) {
  struct state {
    context c;
    std::vector<float> q, k, v,
        concat;  // (B*SEQ_Q,D_MODEL) (B*SEQ_KV,D_MODEL) x2 (B*SEQ_Q,D_MODEL)
    std::vector<projection> projections;
    std::unique_ptr<head_core> core;
  };
  auto st = std::make_shared<state>();
  const std::string words = threading_words(threads);
  const std::size_t dm = p.d_model, d = dm / p.heads;
  const std::size_t rq = p.batch * p.seq_q, rkv = p.batch * p.seq_kv;
  st->q.resize(rq * dm), st->k.resize(rkv * dm), st->v.resize(rkv * dm), st->concat.resize(rq * dm);
  auto& c = st->c;
  st->projections.emplace_back(c, rq, dm, dm, p.x_q, p.w_q, p.b_q, st->q.data());
  st->projections.emplace_back(c, rkv, dm, dm, p.x_kv, p.w_k, p.b_k, st->k.data());
  st->projections.emplace_back(c, rkv, dm, dm, p.x_kv, p.w_v, p.b_v, st->v.data());
  std::vector<head_core::pointers> ptrs;
  for (std::size_t b = 0; b < p.batch; ++b)
    for (std::size_t h = 0; h < p.heads; ++h)
      ptrs.push_back(
          {st->q.data() + b * p.seq_q * dm + h * d, st->k.data() + b * p.seq_kv * dm + h * d,
           st->v.data() + b * p.seq_kv * dm + h * d, st->concat.data() + b * p.seq_q * dm + h * d});
  st->core = std::make_unique<head_core>(c, p.seq_q, p.seq_kv, d, dm, dm, dm, dm, ptrs);
  st->projections.emplace_back(c, rq, dm, dm, st->concat.data(), p.w_o, p.b_o, p.out);
  c.allocate_scratch();
  peer_call call;
  double copied = 0;
  for (const projection& pr : st->projections) copied += pr.copied_bytes;
  call.bytes_materialised =
      double((st->q.size() + st->k.size() + st->v.size() + st->concat.size()) * sizeof(float)) +
      st->core->bytes() + double(c.scratch_bytes) + copied;
  call.description =
      version_words() + ", " + words + (copied > 0 ? ", weights reordered" : ", weights as stored");
  call.run = [s = st.get()] {
    for (int i = 0; i < 3; ++i) s->projections[std::size_t(i)].run(s->c);
    s->core->run(s->c);
    s->projections[3].run(s->c);
    s->c.stream.wait();
  };
  call.output = [o = p.out] { return static_cast<const float*>(o); };
  call.state = st;
  return call;
}

}  // namespace argus::bench::peers
