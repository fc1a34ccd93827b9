// argus/grad/training.hpp -- training layer: a forward pass that keeps what the backward
// needs, and the backward pass, for multi_head_attention.
//
//     auto tape = argus::forward_for_training(mha, argus::fused, x_q, x_k, x_v, argus::causal,
//                                             argus::dropout{0.1, step});  // both optional
//     const auto& y = tape.output();                       // (batch, seq_q, d_model)
//     auto g = argus::backward(tape, dout, argus::fused);  // dout = dL/dy, y's shape
//     // g.w_q has the type of mha.w_q, g.b_o of mha.b_o, g.x_q of x_q (as a tensor), ...
//
// The tape keeps the projected Q, K, V and the merged attention output A (each in the
// merged (batch, seq, heads · d) layout), the per-row log-sum-exp of the scores, and the
// output; it reads the module's weights, the inputs and the masks by reference, so their
// storage must outlive it (backward throws shape_error naming one whose storage went; the
// module itself may move, as its storage moves with it). backward(tape, dout, policy) returns a
// gradients<...> struct: the attention core's gradients come from
// kernel::attention_backward_unfused (unfused: P and dP materialised per head) or
// kernel::flash_attention_backward (fused: FlashAttention-2, no (seq_q × seq_kv) buffer), and every
// parameter gradient from kernel::gemm. Dropout on the attention weights (argus::dropout{rate,
// seed}) drops the weights kernel/dropout.hpp chooses from (seed, batch item, head, query, key):
// both evaluators drop the same ones, and the backward pass recomputes them from the seed the tape
// keeps. The same two calls train attention written as an expression: forward_for_training(e,
// policy) on attend(softmax([masks](scores(q, k))), v) (or merge_heads of it), and backward
// returns attention_gradients: dL/dq, dL/dk, dL/dv typed as the operands.
// docs/explanation/training.md explains the design.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/eval/evaluate.hpp>
#include <argus/eval/fused_attention.hpp>
#include <argus/eval/unfused.hpp>
#include <argus/expr/attention.hpp>
#include <argus/kernel/attention_backward.hpp>
#include <argus/kernel/flash_attention_backward.hpp>
#include <argus/kernel/gemm.hpp>
#include <argus/kernel/instances.hpp>
#include <argus/kernel/parallel.hpp>
#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace argus {

/// Dropout on the attention weights, for forward_for_training (PyTorch's MHA `dropout`):
/// each weight P_ij is dropped with probability `rate` and the kept ones are scaled by
/// 1 / (1 − rate); which ones is decided by (seed, batch item, head, query, key) alone
/// (kernel/dropout.hpp), so fused and unfused drop the same weights and backward() drops
/// them again without a stored mask. Use a new seed per step. 0 <= rate <= 1; 0: none.
struct dropout {
  double rate = 0;
  std::uint64_t seed = 0;
};

/// dL/d of every input and parameter of a multi_head_attention module, each with the type
/// of what it differentiates: x_q, x_k, x_v as tensors of the inputs' shapes, w_q ... b_o
/// as the module's members (a module without biases has no bias gradients either).
template <class Module, Shape SQ, Shape SK, Shape SV>
struct gradients {
  using module_type = Module;
  using value_type = typename Module::value_type;

  tensor<value_type, SQ> x_q;                       // (B,SEQ_Q,D_MODEL)
  tensor<value_type, SK> x_k;                       // (B,SEQ_KV,KDIM)
  tensor<value_type, SV> x_v;                       // (B,SEQ_KV,VDIM)
  decltype(Module::w_q) w_q;                        // (D_MODEL,H*D_K)
  decltype(Module::w_k) w_k;                        // (KDIM,G*D_K)
  decltype(Module::w_v) w_v;                        // (VDIM,G*D_V)
  decltype(Module::w_o) w_o;                        // (H*D_V,D_MODEL)
  [[no_unique_address]] decltype(Module::b_q) b_q;  // (H*D_K)
  [[no_unique_address]] decltype(Module::b_k) b_k;  // (G*D_K)
  [[no_unique_address]] decltype(Module::b_v) b_v;  // (G*D_V)
  [[no_unique_address]] decltype(Module::b_o) b_o;  // (D_MODEL)

  gradients(const SQ& sq, const SK& sk, const SV& sv) : x_q(sq), x_k(sk), x_v(sv) {}
  /// From the parts, moved in (backward() forms each when its inputs are ready).
  gradients(tensor<value_type, SQ> xq, tensor<value_type, SK> xk, tensor<value_type, SV> xv,
            decltype(Module::w_q) wq, decltype(Module::w_k) wk, decltype(Module::w_v) wv,
            decltype(Module::w_o) wo, decltype(Module::b_q) bq, decltype(Module::b_k) bk,
            decltype(Module::b_v) bv, decltype(Module::b_o) bo)
      : x_q(std::move(xq)),
        x_k(std::move(xk)),
        x_v(std::move(xv)),
        w_q(std::move(wq)),
        w_k(std::move(wk)),
        w_v(std::move(wv)),
        w_o(std::move(wo)),
        b_q(std::move(bq)),
        b_k(std::move(bk)),
        b_v(std::move(bv)),
        b_o(std::move(bo)) {}
};

namespace detail {
struct tape_access;
}

/// What forward_for_training keeps for backward: see the top of this header. Movable, not
/// copyable (it is large). The module's weights, the inputs and the masks must keep their storage
/// until backward (the module may move: its tensors' storage moves with it); backward throws
/// shape_error naming one whose storage went.
template <class Module, class Policy, class E, Shape SQ, Shape SK, Shape SV>
class training_tape {
 public:
  using module_type = Module;
  using value_type = typename Module::value_type;
  using output_type = tensor<value_type, typename E::shape_type>;
  using gradients_type = gradients<Module, SQ, SK, SV>;

  /// The forward pass's output, (batch, seq_q, d_model).
  const output_type& output() const noexcept { return out_; }

  training_tape(training_tape&&) noexcept = default;
  training_tape(const training_tape&) = delete;
  training_tape& operator=(const training_tape&) = delete;
  ~training_tape() = default;

 private:
  friend struct detail::tape_access;
  using T = value_type;
  training_tape(E e, detail::materialized<T, SQ> xq, detail::materialized<T, SK> xk,
                detail::materialized<T, SV> xv)
      : expr_(std::move(e)),
        x_q_(std::move(xq)),
        x_k_(std::move(xk)),
        x_v_(std::move(xv)),
        out_(expr_.shape()) {}

  E expr_;  // the module's forward expression: masks and extents
  detail::materialized<T, SQ> x_q_;
  detail::materialized<T, SK> x_k_;
  detail::materialized<T, SV> x_v_;
  // The storage of the module's weights and biases as the forward pass read them (w_q, w_k, w_v,
  // w_o, b_q, b_k, b_v, b_o), and the weights' elements: backward reads them again, through
  // these and not through the module (which may have moved, and been destroyed, since: its
  // storage moves with its tensors), and throws if one's storage has gone.
  std::array<detail::storage_watch, 8> weights_{};
  std::array<const T*, 4> weight_data_{};  // w_q, w_k, w_v, w_o
  dropout dropout_{};
  aligned_buffer<T> q_, k_, v_, a_,
      lse_;  // (B,SEQ_Q,H*D_K) (B,SEQ_KV,G*D_K) (B,SEQ_KV,G*D_V) (B,SEQ_Q,H*D_V) (B,H,SEQ_Q)
  output_type out_;
};

namespace detail {

/// C (rows × n) = A (rows × k) · B (k × n) [+ bias], over the threads by blocks of rows or
/// groups of columns, whichever copies less (detail::parallel_product).
template <class T>
void rows_times(std::size_t rows, std::size_t n, std::size_t k, const T* a, const T* b, T* c,
                const T* bias = nullptr) {
  parallel_product<T>(rows, n, false,
                      [&](std::size_t r0, std::size_t m, std::size_t c0, std::size_t nc) {
                        kernel::gemm_nn<T>(m, nc, k, T(1), a + r0 * k, k, b + c0, n,
                                           c + r0 * n + c0, n, bias ? bias + c0 : nullptr);
                      });
}

/// C (rows × n) = A (rows × k) · Bᵀ, B (n × k), as rows_times.
template <class T>
void rows_times_transposed(std::size_t rows, std::size_t n, std::size_t k, const T* a, const T* b,
                           T* c) {
  parallel_product<T>(
      rows, n, false, [&](std::size_t r0, std::size_t m, std::size_t c0, std::size_t nc) {
        kernel::gemm_nt<T>(m, nc, k, T(1), a + r0 * k, k, b + c0 * k, k, c + r0 * n + c0, n);
      });
}

/// The gradient of x·W + b: dW (k × n) = xᵀ dY and db (n) = Σ_rows dY, x (rows × k),
/// dY (rows × n). db may be null. xᵀ is read in place (kernel::gemm_tn), the rows of dW in
/// blocks over the threads; with no rows, dW = 0 (and x, dY may be null).
template <class T>
void weight_gradient(std::size_t rows, std::size_t k, std::size_t n, const T* x, const T* dy, T* dw,
                     T* db) {
  if (rows == 0) {
    std::fill(dw, dw + k * n, T(0));
  } else {
    const std::size_t per = rows_per_task(k);
    kernel::parallel_for((k + per - 1) / per, [&](std::size_t t, std::size_t) {
      const std::size_t c0 = t * per, mc = std::min(per, k - c0);
      kernel::gemm_tn<T>(mc, n, rows, T(1), x + c0, k, dy, n, dw + c0 * n, n);  // dW = xᵀ dY
    });
  }
  if (db != nullptr) {
    std::fill(db, db + n, T(0));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < n; ++c) db[c] += dy[r * n + c];
  }
}

/// The elements of a bias, or null for a module without biases.
template <class T, class B>
auto bias_data(B& b) noexcept {
  using P = std::conditional_t<std::is_const_v<B>, const T*, T*>;
  if constexpr (std::is_same_v<std::remove_const_t<B>, absent_bias>)
    return P{nullptr};
  else
    return P{b.data()};
}

/// The (masked) scores of the module's forward expression E.
template <class E>
const auto& masked_scores_of(const E& e) {
  return e.x.x.weights.scores;  // projection(merge_heads(attend(softmax(S), v)), W_o, b_o)
}
template <class E>
using masked_scores_t = std::remove_cvref_t<decltype(masked_scores_of(std::declval<const E&>()))>;

/// Throws shape_error when a weight or bias of m has no storage (m, or one of its tensors, was
/// moved from), naming it: the forward pass reads the module's tensors directly, not through an
/// expression whose leaves the evaluators check (backward reads the weights through the storage
/// the tape watches, tape_access::backward).
template <class M>
void check_module_storage(const char* op, const M& m) {
  const auto check = [op](const char* name, const auto& t) {
    if (lacks_storage(t))
      check_has_storage((std::string(op) + " (the module's " + name + ")").c_str(), t.data(),
                        t.shape().size());
  };
  check("w_q", m.w_q), check("w_k", m.w_k), check("w_v", m.w_v), check("w_o", m.w_o);
  if constexpr (M::has_bias)
    check("b_q", m.b_q), check("b_k", m.b_k), check("b_v", m.b_v), check("b_o", m.b_o);
}

struct tape_access {
  /// The attention problem of the tape's core, merged layouts; masks kept alive in keep.
  template <class Tape, class T = typename Tape::value_type>
  static kernel::attention_problem<T> problem(Tape& t, mask_storage<T>& keep) {
    using M = typename Tape::module_type;
    const std::size_t batch = t.x_q_.view.extent(0), sq = t.x_q_.view.extent(1),
                      skv = t.x_k_.view.extent(1);
    kernel::attention_problem<T> p{};
    p.batch = batch, p.heads = M::heads, p.kv_heads = M::kv_heads, p.seq_q = sq, p.seq_kv = skv;
    p.d_k = M::d_k, p.d_v = M::d_v;
    p.q = t.q_.data(), p.q_batch = sq * M::heads * M::d_k, p.q_head = M::d_k,
    p.q_row = M::heads * M::d_k;
    p.k = t.k_.data(), p.k_batch = skv * M::kv_heads * M::d_k, p.k_head = M::d_k,
    p.k_row = M::kv_heads * M::d_k;
    p.v = t.v_.data(), p.v_batch = skv * M::kv_heads * M::d_v, p.v_head = M::d_v,
    p.v_row = M::kv_heads * M::d_v;
    p.o = t.a_.data(), p.o_batch = sq * M::heads * M::d_v, p.o_head = M::d_v,
    p.o_row = M::heads * M::d_v;
    p.lse = t.lse_.data(), p.lse_batch = M::heads * sq, p.lse_head = sq;
    const auto& s = masked_scores_of(t.expr_);
    p.scale = mask_chain<std::remove_cvref_t<decltype(s)>>::scores(s).scale;
    set_masks(s, p, keep);
    p.dropout_rate = static_cast<T>(t.dropout_.rate), p.dropout_seed = t.dropout_.seed;
    return p;
  }

  template <class Tape, class M, class Policy>
  static void forward(Tape& t, const M& m, Policy) {
    using T = typename Tape::value_type;
    check_module_storage("argus::forward_for_training", m);
    const std::size_t batch = t.x_q_.view.extent(0), sq = t.x_q_.view.extent(1),
                      skv = t.x_k_.view.extent(1);
    const std::size_t rq = batch * sq, rkv = batch * skv;
    t.q_ = aligned_buffer<T>(rq * M::heads * M::d_k, uninitialized);
    t.k_ = aligned_buffer<T>(rkv * M::kv_heads * M::d_k, uninitialized);
    t.v_ = aligned_buffer<T>(rkv * M::kv_heads * M::d_v, uninitialized);
    t.a_ = aligned_buffer<T>(rq * M::heads * M::d_v, uninitialized);
    t.lse_ = aligned_buffer<T>(batch * M::heads * sq, uninitialized);
    rows_times(rq, M::heads * M::d_k, M::d_model, t.x_q_.view.data(), m.w_q.data(), t.q_.data(),
               bias_data<T>(m.b_q));
    rows_times(rkv, M::kv_heads * M::d_k, M::kdim, t.x_k_.view.data(), m.w_k.data(), t.k_.data(),
               bias_data<T>(m.b_k));
    rows_times(rkv, M::kv_heads * M::d_v, M::vdim, t.x_v_.view.data(), m.w_v.data(), t.v_.data(),
               bias_data<T>(m.b_v));
    mask_storage<T> keep;
    const kernel::attention_problem<T> p = problem(t, keep);
    if constexpr (std::is_same_v<Policy, fused_policy>)
      kernel::flash_attention(p);
    else
      kernel::attention_unfused(p);
    rows_times(rq, M::d_model, M::heads * M::d_v, t.a_.data(), m.w_o.data(), t.out_.data(),
               bias_data<T>(m.b_o));
  }

  /// The order keeps the high-water mark low: dA lives only through the core's backward, the
  /// gradient of each input is allocated when its dQ, dK or dV is done with and that one is
  /// freed at once, so at most the tape, dQ, dK, dV and one of dA or an input gradient are
  /// alive together (docs/explanation/training.md, "Memory").
  template <class Tape, class Policy, class T>
  static typename Tape::gradients_type backward(const Tape& ct, const T* dout, Policy) {
    using M = typename Tape::module_type;
    using G = typename Tape::gradients_type;
    Tape& t = const_cast<Tape&>(ct);  // problem() takes non-const pointers; nothing of t is written
    // An input or a weight the forward pass read whose storage went since (destroyed, moved
    // into, assigned another shape): backward would read freed memory, or other weights.
    // Checked before the module is read at all (it may be gone with its weights).
    check_storage_kept("argus::backward", t.x_q_.watch, 0, "the input x_q");
    check_storage_kept("argus::backward", t.x_k_.watch, 0, "the input x_k");
    check_storage_kept("argus::backward", t.x_v_.watch, 0, "the input x_v");
    static constexpr const char* weights[] = {
        "the module's w_q", "the module's w_k", "the module's w_v", "the module's w_o",
        "the module's b_q", "the module's b_k", "the module's b_v", "the module's b_o"};
    for (std::size_t i = 0; i < t.weights_.size(); ++i)
      check_storage_kept("argus::backward", t.weights_[i], 0, weights[i]);
    const auto [w_q_data, w_k_data, w_v_data, w_o_data] = t.weight_data_;
    const std::size_t batch = t.x_q_.view.extent(0), sq = t.x_q_.view.extent(1),
                      skv = t.x_k_.view.extent(1);
    const std::size_t rq = batch * sq, rkv = batch * skv;
    constexpr std::size_t hk = M::heads * M::d_k, hv = M::heads * M::d_v;
    constexpr std::size_t gk = M::kv_heads * M::d_k, gv = M::kv_heads * M::d_v;
    decltype(M::w_q) w_q;
    decltype(M::w_k) w_k;
    decltype(M::w_v) w_v;
    decltype(M::w_o) w_o;
    decltype(M::b_q) b_q;
    decltype(M::b_k) b_k;
    decltype(M::b_v) b_v;
    decltype(M::b_o) b_o;

    // out = A·W_o + b_o
    aligned_buffer<T> d_a(rq * hv, uninitialized);  // (B,SEQ_Q,H*D_V)
    rows_times_transposed(rq, hv, M::d_model, dout, w_o_data, d_a.data());
    weight_gradient(rq, hv, M::d_model, t.a_.data(), dout, w_o.data(), bias_data<T>(b_o));

    // The attention core.
    aligned_buffer<T> d_q(rq * hk, uninitialized), d_k(rkv * gk, uninitialized),
        d_v(rkv * gv, uninitialized);
    {
      mask_storage<T> keep;
      kernel::attention_backward_problem<T> bp;
      bp.f = problem(t, keep);
      bp.lse = t.lse_.data();
      bp.d_o = d_a.data();
      bp.d_q = d_q.data(), bp.d_k = d_k.data(), bp.d_v = d_v.data();
      if constexpr (std::is_same_v<Policy, fused_policy>)
        kernel::flash_attention_backward(bp);
      else
        kernel::attention_backward_unfused(bp);
    }
    d_a = aligned_buffer<T>();  // freed before the inputs' gradients are allocated

    // Q = x_q·W_q + b_q, K = x_k·W_k + b_k, V = x_v·W_v + b_v: each input's gradient
    // allocated when its turn comes, and the dQ, dK or dV it came from freed after it.
    const auto input_gradient = [](const auto& x, std::size_t rows, std::size_t width,
                                   aligned_buffer<T>& d, std::size_t hd, const T* w) {
      using S = std::remove_cvref_t<decltype(x.view.shape())>;
      aligned_buffer<T> dx(rows * width, uninitialized);
      rows_times_transposed(rows, width, hd, d.data(), w, dx.data());
      d = aligned_buffer<T>();
      return tensor_access::adopt<T, S>(x.view.shape(), std::move(dx));
    };
    weight_gradient(rq, M::d_model, hk, t.x_q_.view.data(), d_q.data(), w_q.data(),
                    bias_data<T>(b_q));
    auto x_q = input_gradient(t.x_q_, rq, M::d_model, d_q, hk, w_q_data);
    weight_gradient(rkv, M::kdim, gk, t.x_k_.view.data(), d_k.data(), w_k.data(),
                    bias_data<T>(b_k));
    auto x_k = input_gradient(t.x_k_, rkv, M::kdim, d_k, gk, w_k_data);
    weight_gradient(rkv, M::vdim, gv, t.x_v_.view.data(), d_v.data(), w_v.data(),
                    bias_data<T>(b_v));
    auto x_v = input_gradient(t.x_v_, rkv, M::vdim, d_v, gv, w_v_data);
    return G(std::move(x_q), std::move(x_k), std::move(x_v), std::move(w_q), std::move(w_k),
             std::move(w_v), std::move(w_o), std::move(b_q), std::move(b_k), std::move(b_v),
             std::move(b_o));
  }

  template <class Module, class Policy, class E, class SQ, class SK, class SV, class T>
  static training_tape<Module, Policy, E, SQ, SK, SV> make(const Module& m, E e,
                                                           materialized<T, SQ> xq,
                                                           materialized<T, SK> xk,
                                                           materialized<T, SV> xv, dropout d) {
    training_tape<Module, Policy, E, SQ, SK, SV> t(std::move(e), std::move(xq), std::move(xk),
                                                   std::move(xv));
    t.dropout_ = d;
    t.weight_data_ = {m.w_q.data(), m.w_k.data(), m.w_v.data(), m.w_o.data()};
    t.weights_ = {tensor_access::watch(m.w_q), tensor_access::watch(m.w_k),
                  tensor_access::watch(m.w_v), tensor_access::watch(m.w_o)};
    if constexpr (Module::has_bias) {
      t.weights_[4] = tensor_access::watch(m.b_q), t.weights_[5] = tensor_access::watch(m.b_k);
      t.weights_[6] = tensor_access::watch(m.b_v), t.weights_[7] = tensor_access::watch(m.b_o);
    }
    return t;
  }
};

/// x as a row-major, unit-stride result (borrowed when it already is one).
template <class X>
auto contiguous_input(const X& x) {
  return contiguous(evaluator<unfused_policy>{}(as_expression(x)));
}

/// A multi_head_attention<...> (its members and constants, as forward_for_training uses them),
/// whose weights are tensors it can train: a prepacked_attention has the same members, its
/// weights packed for inference and read only.
template <class M>
concept is_attention_module = requires(const M& m) {
  typename M::value_type;
  m.w_q, m.w_k, m.w_v, m.w_o, m.b_q, m.b_k, m.b_v, m.b_o;
  M::d_model, M::heads, M::kv_heads, M::d_k, M::d_v, M::kdim, M::vdim, M::has_bias;
  requires Tensor<decltype(m.w_q)> && Tensor<decltype(m.w_k)> && Tensor<decltype(m.w_v)> &&
      Tensor<decltype(m.w_o)>;
};

/// What forward_for_training takes after its inputs: masks and at most one dropout.
template <class O>
concept training_option = Mask<O> || std::is_same_v<O, dropout>;
template <class... Os>
inline constexpr std::size_t dropouts_in = (std::size_t{std::is_same_v<Os, dropout>} + ... + 0);

/// The dropout among the options (none: rate 0), checked: throws std::invalid_argument
/// naming the rate unless 0 <= rate <= 1.
template <class... Os>
dropout dropout_of(const Os&... options) {
  dropout d{};
  (
      [&](const auto& o) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(o)>, dropout>) d = o;
      }(options),
      ...);
  if (!(d.rate >= 0.0 && d.rate <= 1.0)) {  // NaN fails both
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", d.rate);
    throw std::invalid_argument(std::string("argus::forward_for_training: the dropout rate is ") +
                                rate + "; it must lie in [0, 1]");
  }
  return d;
}

template <class T>
struct is_training_tape : std::false_type {};
template <class M, class P, class E, class SQ, class SK, class SV>
struct is_training_tape<training_tape<M, P, E, SQ, SK, SV>> : std::true_type {};

}  // namespace detail

/// The rules backward(tape, dout) checks before the extents: dout is an operand of the
/// output's value type with the output's axes ((batch, seq, model) after a module's forward).
// clang-format off
template <class DOut, class Out>
concept backward_accepts_dout =
    Operand<DOut> && value_types_agree<value_type_of<DOut>, typename Out::value_type> &&
    dout_axes_equal_output_axes<shape_of<DOut>, typename Out::shape_type>;
// clang-format on

namespace detail {
/// Reports (static_assert) the first rule of backward_accepts_dout that dout breaks, each its own
/// message (one misuse, one error); true when it breaks none.
template <class DOut, class Out>
constexpr bool dout_accepted() {
  if constexpr (any_rejected<DOut>) {
    return false;  // dout's error is already reported
  } else if constexpr (!operand_is_a_tensor_view_or_expression<DOut>) {
    static_assert(operand_is_a_tensor_view_or_expression<DOut>,
                  "operand_is_a_tensor_view_or_expression: argus::backward(tape, dout, policy): "
                  "dout = dL/d(out) is a tensor, a tensor_view or an expression");
    return false;
  } else if constexpr (!value_types_agree<value_type_of<DOut>, typename Out::value_type>) {
    static_assert(value_types_agree<value_type_of<DOut>, typename Out::value_type>,
                  "value_types_agree: argus::backward(tape, dout, policy): dout = dL/d(out) has "
                  "the output's value type");
    return false;
  } else if constexpr (!dout_axes_equal_output_axes<shape_of<DOut>, typename Out::shape_type>) {
    static_assert(dout_axes_equal_output_axes<shape_of<DOut>, typename Out::shape_type>,
                  "dout_axes_equal_output_axes: argus::backward(tape, dout, policy): dout = "
                  "dL/d(out) has the output's axes: (batch, seq, model) after a module's "
                  "forward, (batch, head, seq, head_dim) after an attention core");
    return false;
  } else {
    return true;
  }
}

/// The shape rule of backward(), on numbers, so that the diagnostic names them.
template <std::size_t DOutBatch, std::size_t DOutSeq, std::size_t DOutWidth, std::size_t OutBatch,
          std::size_t OutSeq, std::size_t OutWidth>
constexpr bool dout_fits_output() {
  static_assert(
      dout_shape_equals_output_shape<DOutBatch, DOutSeq, DOutWidth, OutBatch, OutSeq, OutWidth>,
      "argus::backward(tape, dout) requires dout_shape_equals_output_shape: dout = dL/d(out) has "
      "the output's shape (batch, seq_q, d_model)");
  return dout_shape_equals_output_shape<DOutBatch, DOutSeq, DOutWidth, OutBatch, OutSeq, OutWidth>;
}
}  // namespace detail

namespace detail {
/// The arguments of forward_for_training(m, p, args...) before the first option (a mask or a
/// dropout): its inputs.
template <class... Args>
constexpr std::size_t training_inputs() {
  return first_false(
      std::array<bool, sizeof...(Args)>{!training_option<std::remove_cvref_t<Args>>...});
}
/// The positions of the arguments m.forward takes: the inputs, then the masks (the dropout
/// is the tape's).
template <class... Args>
constexpr auto forward_argument_positions() {
  constexpr std::size_t inputs = training_inputs<Args...>();
  constexpr std::array<bool, sizeof...(Args)> mask{Mask<std::remove_cvref_t<Args>>...};
  constexpr std::size_t count = [&] {
    std::size_t c = inputs;
    for (std::size_t i = inputs; i < mask.size(); ++i) c += mask[i] ? 1 : 0;
    return c;
  }();
  std::array<std::size_t, count> at{};
  std::size_t c = 0;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (i < inputs || mask[i]) at[c++] = i;
  return at;
}
/// m.forward(args[at[0]], args[at[1]], ...), each an lvalue (forward_for_training has
/// rejected temporary tensors before: the tape keeps the inputs by reference).
template <auto At, class Module, class Args, std::size_t... I>
auto forward_at(const Module& m, const Args& args, std::index_sequence<I...>) {
  return m.forward(std::get<At[I]>(args)...);
}
/// Whether every argument from the first option on is an option (a mask or a dropout).
template <class... Args>
constexpr bool options_follow_inputs() {
  constexpr std::size_t inputs = training_inputs<Args...>();
  constexpr std::array<bool, sizeof...(Args)> option{training_option<std::remove_cvref_t<Args>>...};
  for (std::size_t i = inputs; i < option.size(); ++i)
    if (!option[i]) return false;
  return true;
}
}  // namespace detail

/// forward_for_training(m, policy, inputs..., options...): after the inputs come only options,
/// masks and dropouts. (A concept of the arguments, so that the report shows them.)
template <class... Args>
concept options_follow_inputs = detail::options_follow_inputs<Args...>();
/// forward_for_training: at most one argus::dropout (two rates for one call would be
/// ambiguous). Count: how many were given.
template <std::size_t Count>
concept at_most_one_dropout = Count <= 1;
/// forward_for_training: every mask of the masked scores S is of a kind the backward kernels
/// compute (causal, ignore_keys, ignore_where, add_to_scores: detail::fused_mask's `trains`);
/// a mask kind of one's own evaluates (in the fused loop nest too), it does not train.
template <class S>
concept masks_have_training_kernels = bool(detail::mask_chain<S>::trains);
/// forward_for_training(m, ...): at most one mask of each kind (causal, ignore_keys,
/// ignore_where, add_to_scores) over the masked scores S of the module's expression.
template <class S>
concept at_most_one_mask_of_each_kind = bool(detail::mask_chain<S>::one_per_slot);

/// Runs m's forward pass on its inputs, (x) or (x_q, x_k, x_v), with masks under policy p
/// (argus::fused or argus::unfused) and keeps what backward() needs: forward_for_training(m,
/// p, x_q, x_k, x_v, os...) or forward_for_training(m, p, x, os...) (self-attention: the
/// gradient of x is g.x_q + g.x_k + g.x_v). os: options, masks (at most one of each kind) and
/// at most one argus::dropout, in any order. The relations and run-time checks are those of
/// m.forward(inputs..., masks...), and m.forward reports the first broken one, as the only
/// error; a dropout rate outside [0, 1] throws std::invalid_argument, before anything is
/// computed.
// clang-format off
template <class Module, EvaluationPolicy P, class... Args>
requires detail::is_attention_module<Module>
auto forward_for_training(const Module& m, P p, Args&&... args) {
  // clang-format on
  constexpr std::size_t inputs = detail::training_inputs<Args...>();
  constexpr auto at = detail::forward_argument_positions<Args...>();
  const auto refs = std::forward_as_tuple(args...);
  if constexpr (!detail::options_follow_inputs<Args...>()) {
    static_assert(options_follow_inputs<Args...>,
                  "options_follow_inputs: argus::forward_for_training(m, policy, inputs..., "
                  "options...): after the inputs come only masks and at most one argus::dropout");
    return detail::rejected{};
  } else if constexpr (!(operand_is_not_a_temporary_tensor<Args> && ...)) {
    static_assert((operand_is_not_a_temporary_tensor<Args> && ...),
                  "operand_is_not_a_temporary_tensor: argus::forward_for_training(m, policy, "
                  "inputs...): the tape keeps the inputs by reference for backward(); name each "
                  "input tensor first (a temporary is gone at the end of the statement)");
    return detail::rejected{};
  } else {
    // Without a dropout, m.forward takes the arguments as they are: its report of a broken
    // rule is then one call deeper than the user's call, not two.
    auto e = [&] {
      if constexpr (at.size() == sizeof...(Args))
        return m.forward(args...);
      else
        return detail::forward_at<at>(m, refs, std::make_index_sequence<at.size()>{});
    }();
    using E = decltype(e);
    if constexpr (std::is_same_v<E, detail::rejected>) {
      return e;  // m.forward has reported the broken rule
    } else if constexpr (!masks_have_training_kernels<detail::masked_scores_t<E>>) {
      static_assert(masks_have_training_kernels<detail::masked_scores_t<E>>,
                    "masks_have_training_kernels: argus::forward_for_training trains the mask "
                    "kinds the kernels compute (causal, ignore_keys, ignore_where, add_to_scores); "
                    "a mask kind of one's own evaluates (argus::evaluate), it does not train");
      return detail::rejected{};
    } else {
      // The inputs are no dropouts: counting over every argument counts the options'.
      static_assert(at_most_one_dropout<detail::dropouts_in<std::remove_cvref_t<Args>...>>,
                    "at_most_one_dropout: argus::forward_for_training: at most one argus::dropout");
      static_assert(at_most_one_mask_of_each_kind<detail::masked_scores_t<E>>,
                    "at_most_one_mask_of_each_kind: argus::forward_for_training: at most one mask "
                    "of each kind (causal, ignore_keys, ignore_where, add_to_scores)");
      const dropout d = detail::dropout_of(args...);  // it looks at the dropout only
      constexpr std::size_t k = inputs == 1 ? 0 : 1, v = inputs == 1 ? 0 : 2;
      auto tape = detail::tape_access::make<Module, P, E>(
          m, std::move(e), detail::contiguous_input(std::get<0>(refs)),
          detail::contiguous_input(std::get<k>(refs)), detail::contiguous_input(std::get<v>(refs)),
          d);
      detail::tape_access::forward(tape, m, p);
      return tape;
    }
  }
}

/// The gradients of L with respect to every input and parameter of the tape's module, given
/// dout = dL/d(out), under policy p: argus::unfused materialises P and dP per head,
/// argus::fused runs the FlashAttention-2 backward (either works on a tape from either
/// forward). dout must have the output's shape: static extents are checked here, run-time
/// ones throw shape_error before anything is computed.
// clang-format off
template <class Tape, class DOut, EvaluationPolicy P>
requires detail::is_training_tape<Tape>::value typename Tape::gradients_type backward(
    const Tape& tape, const DOut& dout, P p) {
  using out = typename Tape::output_type;
  // clang-format on
  if constexpr (!detail::dout_accepted<const DOut&, out>()) {
    std::terminate();  // not reached: a static_assert in dout_accepted has failed
  } else {
    using S = shape_of<const DOut&>;
    using O = typename out::shape_type;
    if constexpr (detail::dout_fits_output<static_extent_v<S, 0>, static_extent_v<S, 1>,
                                           static_extent_v<S, 2>, static_extent_v<O, 0>,
                                           static_extent_v<O, 1>, static_extent_v<O, 2>>()) {
      const auto s = as_expression(dout).shape();
      const auto& o = tape.output().shape();
      detail::check_extents_agree("argus::backward", "the batch of dout", s.extent(0),
                                  "the batch of the output", o.extent(0));
      detail::check_extents_agree("argus::backward", "the length of dout", s.extent(1),
                                  "the length of the output (seq_q)", o.extent(1));
      auto d = detail::contiguous_input(dout);
      return detail::tape_access::backward(tape, d.view.data(), p);
    } else {
      std::terminate();  // not reached: the static_assert in dout_fits_output has failed
    }
  }
}

// --- Attention written as expressions ----------------------------------------------------

/// dL/dq, dL/dk, dL/dv of an attention core attend(softmax([masks](scores(q, k))), v), each
/// a tensor of the shape of the operand it differentiates ((batch, heads, seq, d) as the
/// operands q, k and v of the expression: whatever sub-expressions they are, evaluated).
template <class T, Shape SQ, Shape SK, Shape SV>
struct attention_gradients {
  using value_type = T;
  tensor<T, SQ> q;  // (B,H,SEQ_Q,D_K)
  tensor<T, SK> k;  // (B,G,SEQ_KV,D_K)
  tensor<T, SV> v;  // (B,G,SEQ_KV,D_V)
  attention_gradients(const SQ& sq, const SK& sk, const SV& sv) : q(sq), k(sk), v(sv) {}
};

namespace detail {

/// The attention core of an expression E: E itself (output (B,H,SEQ_Q,D_V)) or the core
/// under merge_heads (output (B,SEQ_Q,H*D_V)). ok: E is one of them.
template <class E>
struct trainable_core {
  using traits = attention_core_traits<E>;
  static constexpr bool ok = traits::ok && !traits::untrained_masks, merged = false;
  static const E& get(const E& e) noexcept { return e; }
};
template <class X>
struct trainable_core<merge_heads_node<X>> {
  using traits = attention_core_traits<X>;
  static constexpr bool ok = traits::ok && !traits::untrained_masks, merged = true;
  static const X& get(const merge_heads_node<X>& e) noexcept { return e.x; }
};

/// The operands q, k (of the scores) and v of a core attend(softmax(S), V).
template <class Core>
struct core_operands;
template <class S, class V>
struct core_operands<attend_node<softmax_node<S>, V>> {
  using node = attend_node<softmax_node<S>, V>;
  static const auto& scores(const node& e) { return mask_chain<S>::scores(e.weights.scores); }
  using scores_t = std::remove_cvref_t<decltype(scores(std::declval<const node&>()))>;
  using q_shape = typename decltype(scores_t::q)::shape_type;
  using k_shape = typename decltype(scores_t::k)::shape_type;
  using v_shape = typename V::shape_type;
  static const S& masked_scores(const node& e) { return e.weights.scores; }
};

struct attention_tape_access;

}  // namespace detail

/// What forward_for_training(e, policy) keeps for backward: q, k, v evaluated (row-major;
/// a view of the caller's tensor where the operand is one), the output and the per-row
/// log-sum-exp. Movable, not copyable; the tensors the expression reads must outlive it.
template <class E, class Policy>
class attention_training_tape {
  using core_t =
      std::remove_cvref_t<decltype(detail::trainable_core<E>::get(std::declval<const E&>()))>;
  using ops = detail::core_operands<core_t>;

 public:
  using expression_type = E;
  using value_type = typename E::value_type;
  using output_type = tensor<value_type, typename E::shape_type>;
  using gradients_type = attention_gradients<value_type, typename ops::q_shape,
                                             typename ops::k_shape, typename ops::v_shape>;

  /// The output of e, as evaluate(e, policy) computes it (with the dropout, if any).
  const output_type& output() const noexcept { return out_; }

  attention_training_tape(attention_training_tape&&) noexcept = default;
  attention_training_tape(const attention_training_tape&) = delete;
  attention_training_tape& operator=(const attention_training_tape&) = delete;
  ~attention_training_tape() = default;

 private:
  friend struct detail::attention_tape_access;
  using T = value_type;
  explicit attention_training_tape(E e) : expr_(std::move(e)), out_(expr_.shape()) {}

  E expr_;
  detail::materialized<T, typename ops::q_shape> q_;
  detail::materialized<T, typename ops::k_shape> k_;
  detail::materialized<T, typename ops::v_shape> v_;
  dropout dropout_{};
  aligned_buffer<T> lse_;  // (B,H,SEQ_Q)
  output_type out_;
};

namespace detail {

template <class T>
struct is_attention_training_tape : std::false_type {};
template <class E, class P>
struct is_attention_training_tape<attention_training_tape<E, P>> : std::true_type {};

struct attention_tape_access {
  template <class E, class P>
  static attention_training_tape<E, P> make(E e, dropout d) {
    attention_training_tape<E, P> t(std::move(e));
    t.dropout_ = d;
    return t;
  }

  /// The kernel problem of the tape: q, k, v, the output (merged or head-major), lse, masks
  /// (kept alive in keep), dropout.
  template <class Tape, class T = typename Tape::value_type>
  static kernel::attention_problem<T> problem(const Tape& ct, mask_storage<T>& keep) {
    Tape& t = const_cast<Tape&>(ct);  // the problem's output pointers; backward writes none
    using core = typename Tape::core_t;
    const auto& q = t.q_.view;
    const auto& k = t.k_.view;
    const auto& v = t.v_.view;
    kernel::attention_problem<T> p{};
    p.batch = q.extent(0), p.heads = q.extent(1), p.kv_heads = k.extent(1);
    p.seq_q = q.extent(2), p.seq_kv = k.extent(2), p.d_k = q.extent(3), p.d_v = v.extent(3);
    p.q = q.data(), p.q_batch = q.stride(0), p.q_head = q.stride(1), p.q_row = q.stride(2);
    p.k = k.data(), p.k_batch = k.stride(0), p.k_head = k.stride(1), p.k_row = k.stride(2);
    p.v = v.data(), p.v_batch = v.stride(0), p.v_head = v.stride(1), p.v_row = v.stride(2);
    p.o = t.out_.data();
    if constexpr (trainable_core<typename Tape::expression_type>::merged)
      p.o_batch = p.seq_q * p.heads * p.d_v, p.o_head = p.d_v, p.o_row = p.heads * p.d_v;
    else
      p.o_batch = p.heads * p.seq_q * p.d_v, p.o_head = p.seq_q * p.d_v, p.o_row = p.d_v;
    p.lse = t.lse_.data(), p.lse_batch = p.heads * p.seq_q, p.lse_head = p.seq_q;
    const core& c = trainable_core<typename Tape::expression_type>::get(t.expr_);
    const auto& s = core_operands<core>::masked_scores(c);
    p.scale = core_operands<core>::scores(c).scale;
    set_masks(s, p, keep);
    p.dropout_rate = static_cast<T>(t.dropout_.rate), p.dropout_seed = t.dropout_.seed;
    return p;
  }

  template <class Tape, class Policy>
  static void forward(Tape& t, Policy) {
    using core = typename Tape::core_t;
    using T = typename Tape::value_type;
    const core& c = trainable_core<typename Tape::expression_type>::get(t.expr_);
    const evaluator<Policy> ev{};
    t.q_ = contiguous(ev(core_operands<core>::scores(c).q));
    t.k_ = contiguous(ev(core_operands<core>::scores(c).k));
    t.v_ = contiguous(ev(c.v));
    t.lse_ = aligned_buffer<T>(t.q_.view.extent(0) * t.q_.view.extent(1) * t.q_.view.extent(2),
                               uninitialized);
    mask_storage<T> keep;
    const kernel::attention_problem<T> p = problem(t, keep);
    if constexpr (std::is_same_v<Policy, fused_policy>)
      kernel::flash_attention(p);
    else
      kernel::attention_unfused(p);
  }

  template <class Tape, class Policy, class T>
  static typename Tape::gradients_type backward(const Tape& t, const T* dout, Policy) {
    check_storage_kept("argus::backward", t.q_.watch, 0, "the tensor of q");
    check_storage_kept("argus::backward", t.k_.watch, 0, "the tensor of k");
    check_storage_kept("argus::backward", t.v_.watch, 0, "the tensor of v");
    typename Tape::gradients_type g(t.q_.view.shape(), t.k_.view.shape(), t.v_.view.shape());
    mask_storage<T> keep;
    kernel::attention_backward_problem<T> bp;
    bp.f = problem(t, keep);
    bp.lse = t.lse_.data(), bp.d_o = dout;
    bp.d_q = g.q.data(), bp.d_k = g.k.data(), bp.d_v = g.v.data();  // row-major, as q_, k_, v_
    if constexpr (std::is_same_v<Policy, fused_policy>)
      kernel::flash_attention_backward(bp);
    else
      kernel::attention_backward_unfused(bp);
    return g;
  }
};

}  // namespace detail

/// forward_for_training(e, policy) trains an attention core: attend(softmax(scores(q, k) with
/// at most one mask of each kind), v), or merge_heads of one.
template <class E>
concept expression_is_an_attention_core = bool(detail::trainable_core<E>::ok);

namespace detail {
/// Reports (static_assert) why e is not an attention core forward_for_training can train.
template <class E>
constexpr bool trainable_expression() {
  using traits = typename trainable_core<E>::traits;
  if constexpr (traits::untrained_masks) {
    static_assert(masks_have_training_kernels<typename traits::masked_scores>,
                  "masks_have_training_kernels: argus::forward_for_training(e, policy) trains the "
                  "mask kinds the kernels compute (causal, ignore_keys, ignore_where, "
                  "add_to_scores); a mask kind of one's own evaluates (argus::evaluate), it does "
                  "not train");
    return false;
  } else {
    static_assert(expression_is_an_attention_core<E>,
                  "expression_is_an_attention_core: argus::forward_for_training(e, policy): e is "
                  "an attention core attend(softmax(scores(q, k) with at most one mask of each "
                  "kind), v), or merge_heads of one");
    return expression_is_an_attention_core<E>;
  }
}

template <class... Os>
concept dropout_options = (std::is_same_v<Os, dropout> && ...);

}  // namespace detail

/// Runs the attention core e (attend(softmax([masks](scores(q, k))), v), or merge_heads of
/// one) under policy p and keeps what backward() needs; os: at most one argus::dropout. The
/// gradients are those of e's operands q, k and v (backward(tape, dout, p)).
// clang-format off
template <Expression E, EvaluationPolicy P, class... Os>
requires detail::dropout_options<Os...>
auto forward_for_training(const E& e, P p, const Os&... os) {
  // clang-format on
  static_assert(at_most_one_dropout<detail::dropouts_in<Os...>>,
                "at_most_one_dropout: argus::forward_for_training: at most one argus::dropout");
  if constexpr (detail::trainable_expression<E>()) {
    const dropout d = detail::dropout_of(os...);
    auto tape = detail::attention_tape_access::make<E, P>(e, d);
    detail::attention_tape_access::forward(tape, p);
    return tape;
  } else {
    // trainable_expression has reported it; backward() takes the marker silently (a void
    // return made `auto tape = ...` a second error).
    return detail::rejected{};
  }
}

/// forward_for_training of a temporary module (`forward_for_training(mha_t{}, ...)`): the tape
/// keeps a reference to the module, whose weights backward() reads again. Reported
/// (module_is_not_a_temporary), once.
// clang-format off
template <class Module, class P, class... Args>
  requires(!std::is_lvalue_reference_v<Module> &&
           detail::is_attention_module<std::remove_cv_t<Module>>)
detail::rejected forward_for_training(Module&&, P, Args&&...) {
  // clang-format on
  static_assert(module_is_not_a_temporary<Module&&>,
                "module_is_not_a_temporary: argus::forward_for_training(m, policy, ...) keeps a "
                "reference to m, whose weights backward() reads; name the module first (a "
                "temporary is gone at the end of the statement)");
  return {};
}

/// forward_for_training's first argument: a multi_head_attention, or an attention core written
/// as an expression. (One atomic constraint: the error shows the argument's type once.)
template <class M>
concept argument_is_a_module_or_an_expression = bool(detail::is_attention_module<M> ||
                                                     Expression<M>);
/// forward_for_training(e, policy, options...) of an expression: its options are dropouts (at
/// most one); its masks are written in e.
template <class... Os>
concept expression_options_are_dropouts = detail::dropout_options<std::remove_cvref_t<Os>...>;

/// forward_for_training with arguments neither form above takes: reports the first broken rule
/// (the first argument, the policy, an expression's options), as the only error, and gives the
/// rejected marker that backward() takes silently. Without it such a call matched no overload,
/// and the compilers listed the two candidates' constraints instead of a rule.
// clang-format off
template <class M, class P, class... Args>
  requires(!std::is_same_v<M, detail::rejected> &&
           !(detail::is_attention_module<M> && EvaluationPolicy<P>) &&
           !(Expression<M> && EvaluationPolicy<P> &&
             detail::dropout_options<std::remove_cvref_t<Args>...>))
detail::rejected forward_for_training(const M&, P, Args&&...) {
  // clang-format on
  if constexpr (!argument_is_a_module_or_an_expression<M>) {
    static_assert(argument_is_a_module_or_an_expression<M>,
                  "argument_is_a_module_or_an_expression: argus::forward_for_training(m, policy, "
                  "...) trains a multi_head_attention m, or an attention core expression "
                  "attend(softmax(scores(q, k)), v) (a prepacked_attention serves inference: "
                  "train the module, then prepack it)");
  } else if constexpr (!argument_is_an_evaluation_policy<P>) {
    static_assert(argument_is_an_evaluation_policy<P>,
                  "argument_is_an_evaluation_policy: argus::forward_for_training(m, policy, ...) "
                  "takes argus::fused or argus::unfused as the policy");
  } else {
    static_assert(expression_options_are_dropouts<Args...>,
                  "expression_options_are_dropouts: argus::forward_for_training(e, policy, "
                  "options...): an expression's options are at most one argus::dropout (its "
                  "masks are written in e)");
  }
  return {};
}

namespace detail {
/// The shape rule of backward() for a head-major attention output, on numbers, so that the
/// diagnostic names them.
template <std::size_t DOutBatch, std::size_t DOutHeads, std::size_t DOutSeq, std::size_t DOutWidth,
          std::size_t OutBatch, std::size_t OutHeads, std::size_t OutSeq, std::size_t OutWidth>
constexpr bool dout_fits_attention_output() {
  static_assert(dout_shape_equals_attention_shape<DOutBatch, DOutHeads, DOutSeq, DOutWidth,
                                                  OutBatch, OutHeads, OutSeq, OutWidth>,
                "argus::backward(tape, dout) requires dout_shape_equals_attention_shape: dout = "
                "dL/d(out) has the attention output's shape (batch, heads, seq_q, d_v)");
  return dout_shape_equals_attention_shape<DOutBatch, DOutHeads, DOutSeq, DOutWidth, OutBatch,
                                           OutHeads, OutSeq, OutWidth>;
}
}  // namespace detail

/// The gradients of L with respect to the operands q, k, v of the tape's expression, given
/// dout = dL/d(out) of the output's shape, under policy p (either, on a tape from either).
/// Static extents are checked here; run-time ones throw shape_error before anything runs.
// clang-format off
template <class Tape, class DOut, EvaluationPolicy P>
requires detail::is_attention_training_tape<Tape>::value typename Tape::gradients_type backward(
    const Tape& tape, const DOut& dout, P p) {
  using out = typename Tape::output_type;
  // clang-format on
  using O = typename out::shape_type;
  if constexpr (!detail::dout_accepted<const DOut&, out>()) {
    std::terminate();  // not reached: a static_assert in dout_accepted has failed
  } else {
    using S = shape_of<const DOut&>;
    constexpr bool fits = [] {
      if constexpr (O::rank() == 3)
        return detail::dout_fits_output<static_extent_v<S, 0>, static_extent_v<S, 1>,
                                        static_extent_v<S, 2>, static_extent_v<O, 0>,
                                        static_extent_v<O, 1>, static_extent_v<O, 2>>();
      else
        return detail::dout_fits_attention_output<static_extent_v<S, 0>, static_extent_v<S, 1>,
                                                  static_extent_v<S, 2>, static_extent_v<S, 3>,
                                                  static_extent_v<O, 0>, static_extent_v<O, 1>,
                                                  static_extent_v<O, 2>, static_extent_v<O, 3>>();
    }();
    if constexpr (fits) {
      const auto s = as_expression(dout).shape();
      const auto& o = tape.output().shape();
      static constexpr const char* dout_names[2][4] = {
          {"the batch of dout", "the length of dout", "the width of dout", ""},
          {"the batch of dout", "the heads of dout", "the length of dout", "the width of dout"}};
      static constexpr const char* out_names[2][4] = {
          {"the batch of the output", "the length of the output (seq_q)", "the width of the output",
           ""},
          {"the batch of the output", "the heads of the output", "the length of the output (seq_q)",
           "the width of the output (d_v)"}};
      constexpr std::size_t r = O::rank() == 3 ? 0 : 1;
      for (std::size_t a = 0; a < O::rank(); ++a)
        detail::check_extents_agree("argus::backward", dout_names[r][a], s.extent(a),
                                    out_names[r][a], o.extent(a));
      auto d = detail::contiguous_input(dout);
      return detail::attention_tape_access::backward(tape, d.view.data(), p);
    } else {
      std::terminate();  // not reached: a static_assert has failed
    }
  }
}

/// A rejected module call or expression (its error is already reported): forward_for_training
/// and backward take it and give it back, silently, so that one misuse is one error.
template <EvaluationPolicy P, class... Os>
detail::rejected forward_for_training(detail::rejected, P, const Os&...) {
  return {};
}
template <class DOut, EvaluationPolicy P>
detail::rejected backward(detail::rejected, const DOut&, P) {
  return {};
}

/// backward's first argument: what forward_for_training returned.
template <class Tape>
concept argument_is_a_training_tape = bool(detail::is_training_tape<Tape>::value ||
                                           detail::is_attention_training_tape<Tape>::value);
/// backward(tape, dout, policy): three arguments, the last a policy.
template <std::size_t Count>
concept backward_takes_a_tape_dout_and_policy = Count == 3;

namespace detail {
/// Whether backward(tape, args...) is one of the forms above (a tape, or a rejected one, then
/// dout and a policy).
template <class Tape, class... Args>
constexpr bool backward_form() {
  if constexpr (sizeof...(Args) != 2) {
    return false;
  } else {
    using P = std::remove_cvref_t<std::tuple_element_t<1, std::tuple<Args...>>>;
    return EvaluationPolicy<P> && (argument_is_a_training_tape<Tape> || is_rejected<Tape>);
  }
}
}  // namespace detail

/// backward with arguments no form above takes (an expression or a module for the tape, no
/// policy, a flag for it): reports the first broken rule, as the only error, where the
/// compilers listed the candidates' constraints.
template <class Tape, class... Args>
  requires(!detail::backward_form<Tape, Args...>())
detail::rejected backward(const Tape&, const Args&...) {
  if constexpr (!argument_is_a_training_tape<Tape> && !detail::is_rejected<Tape>) {
    static_assert(argument_is_a_training_tape<Tape>,
                  "argument_is_a_training_tape: argus::backward(tape, dout, policy) takes the tape "
                  "that argus::forward_for_training(m or e, policy, ...) returned");
  } else if constexpr (!backward_takes_a_tape_dout_and_policy<1 + sizeof...(Args)>) {
    static_assert(backward_takes_a_tape_dout_and_policy<1 + sizeof...(Args)>,
                  "backward_takes_a_tape_dout_and_policy: argus::backward(tape, dout, policy) "
                  "takes dout = dL/d(out) and a policy, argus::fused or argus::unfused");
  } else {
    using P = std::remove_cvref_t<std::tuple_element_t<1, std::tuple<Args...>>>;
    static_assert(argument_is_an_evaluation_policy<P>,
                  "argument_is_an_evaluation_policy: argus::backward(tape, dout, policy) takes "
                  "argus::fused or argus::unfused as the policy");
  }
  return {};
}

}  // namespace argus
