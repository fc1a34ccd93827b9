// argus/eval/explain.hpp -- evaluation layer: the evaluation plan of an expression.
//
//     std::cout << argus::explain(mha.forward(x, argus::causal), argus::fused);
//
// Walks the expression as the policy's evaluator would (eval/select.hpp): each step says
// whether it runs fused or unfused, what it computes, its result shape and the bytes it
// materialises; a fused loop nest also gives its tiles and per-thread scratch. The total
// is what the plan allocates besides its inputs (the n×n scores of every head, unfused); a
// root step marked "into out" writes straight into the tensor evaluate(e, p, out) is given,
// so that evaluation allocates its bytes fewer (materialised_bytes_into_out()).
// Its last line names the instruction set the kernels run (kernel::active_isa()) and whether
// a dispatching kernel library chose it at run time or the program was compiled for it.
#pragma once

#include <argus/eval/evaluate.hpp>
#include <argus/eval/fused_attention.hpp>
#include <argus/eval/select.hpp>
#include <argus/expr/attention.hpp>
#include <argus/kernel/isa.hpp>

#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace argus {

/// One step of a plan; depth is its depth in the expression tree.
struct plan_step {
  int depth = 0;
  bool fused = false;
  std::string what;       // the step, in words
  std::string shape;      // its result extents, e.g. (2,8,128,64)
  std::size_t bytes = 0;  // bytes it materialises (0 for a view or an input)
  /// The root's step, when it writes its result straight into out under evaluate(e, p, out)
  /// (unless out shares memory with an operand the step reads): those bytes are then not
  /// materialised.
  bool into_out = false;
};

/// The evaluation plan of an expression under a policy.
struct plan {
  std::string policy;
  std::vector<plan_step> steps;  // pre-order: a step, then the steps of its operands
  /// The instruction set the kernels run: kernel::active_isa() when the plan was made.
  kernel::isa instruction_set = kernel::isa::portable;
  /// True when a dispatching kernel library chose it at run time (from the CPU, or from
  /// ARGUS_ISA); false when the kernels are compiled for the program's own target.
  bool chosen_at_run_time = false;
  std::size_t materialised_bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& s : steps) n += s.bytes;
    return n;
  }
  /// What evaluate(e, p, out) materialises: the root's result is written into out when its
  /// step can (plan_step::into_out), and copied there otherwise; below a root that works in
  /// place (a mask, the softmax), the step whose result it works on writes into out.
  std::size_t materialised_bytes_into_out() const noexcept {
    std::size_t n = materialised_bytes();
    for (const auto& s : steps)
      if (s.into_out) n -= s.bytes;
    return n;
  }
  std::string to_string() const {
    std::ostringstream os;
    os << *this;
    return os.str();
  }
  friend std::ostream& operator<<(std::ostream& os, const plan& p) {
    os << "plan (" << p.policy << "), materialising " << p.materialised_bytes() << " bytes:\n";
    for (const auto& s : p.steps) {
      os << std::string(2 * std::size_t(s.depth) + 2, ' ') << (s.fused ? "[fused] " : "") << s.what
         << "  -> " << s.shape;
      if (s.bytes) os << ", " << s.bytes << " bytes";
      if (s.into_out) os << " (written straight into out by evaluate(e, p, out))";
      os << "\n";
    }
    os << "kernels: " << kernel::isa_name(p.instruction_set) << " ("
       << kernel::isa_register_bytes(p.instruction_set) << "-byte registers), "
       << (p.chosen_at_run_time ? "chosen at run time" : "the set this program is compiled for")
       << "\n";
    return os;
  }
};

namespace detail {

template <Shape S>
std::string extents_string(const S& s) {
  return extents_text(s.extents(), ",");
}

template <class E>
std::size_t result_bytes(const E& e) {
  return e.shape().size() * sizeof(typename E::value_type);
}

template <class Policy>
struct planner {
  plan& out;
  /// The depth of the node that evaluate(e, p, out) lets write into out: 0, the root, or
  /// below a chain of steps that work in place from the root down (evaluate_in_place_operand),
  /// the node whose result they work on.
  int* out_depth;

  /// into_out: the step evaluates its node with allocate_result, so as the root it writes into
  /// the output tensor of evaluate(e, p, out).
  void add(int depth, bool fused, std::string what, std::string shape, std::size_t bytes,
           bool into_out = false) const {
    out.steps.push_back(
        {depth, fused, std::move(what), std::move(shape), bytes, into_out && depth == *out_depth});
  }
  /// A step that works in place on its operand's result: as the node that writes into out, it
  /// hands that to its operand (one level down).
  void add_in_place(int depth, std::string what, std::string shape) const {
    const bool root = depth == *out_depth;
    add(depth, false, std::move(what), std::move(shape), 0, root);
    if (root) *out_depth = depth + 1;
  }

  template <Expression E>
  void operator()(const E& e, int depth) const {
    using P = selected_pattern<Policy, E>;
    if constexpr (std::is_void_v<P>)
      describe_step(e, depth);
    else
      P::describe(e, *this, depth);
  }

  template <class T, Shape S>
  void describe_step(const leaf<T, S>& e, int depth) const {
    add(depth, false, e.packed.data != nullptr ? "packed weight (packed_weight)" : "input tensor",
        extents_string(e.shape()), 0);
  }
  template <class X, class W, class B>
  void describe_step(const projection<X, W, B>& e, int depth) const {
    using node = projection<X, W, B>;
    std::string what = node::per_head ? (node::split_input ? "project, narrow per-head x·W[h]"
                                                           : "project, per-head x·W[h]")
                                      : "project x·W";
    add(depth, false,
        what + (node::has_bias ? " + b" : "") + " (kernel::gemm_nn)" +
            (node::per_head ? std::string() : packed_weight_words(e.w)),
        extents_string(e.shape()), result_bytes(e), true);
    (*this)(e.x, depth + 1);
    (*this)(e.w, depth + 1);
    if constexpr (node::has_bias) (*this)(e.b, depth + 1);
  }
  template <std::size_t H, class X>
  void describe_step(const split_heads_node<H, X>& e, int depth) const {
    // The unfused step copies only where the split layout is not already row-major: a
    // tensor's or view's own layout, split; a computed x is row-major, and its split is so
    // with one head or one position.
    bool view = false;
    if constexpr (requires { split_layout<H>(e.x.view.layout()); })
      view = split_layout<H>(e.x.view.layout()).is_row_major();
    else
      view = H == 1 || e.shape().extent(2) == 1;
    add(depth, false,
        "split_heads<" + std::to_string(H) + ">" +
            (view ? " (a view: already row-major, no copy)" : " (copy)"),
        extents_string(e.shape()), view ? 0 : result_bytes(e), !view);
    (*this)(e.x, depth + 1);
  }
  template <class X>
  void describe_step(const merge_heads_node<X>& e, int depth) const {
    add(depth, false, "merge_heads (copy)", extents_string(e.shape()), result_bytes(e), true);
    (*this)(e.x, depth + 1);
  }
  template <class Q, class K>
  void describe_step(const scores_node<Q, K>& e, int depth) const {
    add(depth, false, "scores Q·Kᵀ·scale per head (kernel::gemm_nt)", extents_string(e.shape()),
        result_bytes(e), true);
    (*this)(e.q, depth + 1);
    (*this)(e.k, depth + 1);
  }
  template <class E, class M>
  void describe_step(const masked_node<E, M>& e, int depth) const {
    add_in_place(depth, "mask " + std::string(e.mask.name()) + " (in place)",
                 extents_string(e.shape()));
    (*this)(e.scores, depth + 1);
  }
  template <class E>
  void describe_step(const softmax_node<E>& e, int depth) const {
    add_in_place(depth, "softmax over keys (kernel::softmax_rows, in place)",
                 extents_string(e.shape()));
    (*this)(e.scores, depth + 1);
  }
  template <class P, class V>
  void describe_step(const attend_node<P, V>& e, int depth) const {
    add(depth, false, "attend P·V per head (kernel::gemm_nn)", extents_string(e.shape()),
        result_bytes(e), true);  // allocate_result: as the root, it writes into out
    (*this)(e.weights, depth + 1);
    (*this)(e.v, depth + 1);
  }
};

}  // namespace detail

/// The plan of e under policy p: argus::unfused or argus::fused. In a program that links a
/// dispatching kernel library, throws kernel::isa_error where ARGUS_ISA cannot be honoured,
/// as every kernel call then does.
/// Anything but an expression and a policy does not compile, the error naming the rule
/// (argument_is_an_expression, argument_is_an_evaluation_policy), as for evaluate; a rejected
/// expression (its error already reported) gives an empty plan, silently.
template <class E, class P>
plan explain(const E& e, P) {
  if constexpr (!detail::evaluation_accepted<detail::policy_entry::explain, E, P>()) {
    (void)e;
    return {};
  } else {
    plan out{P::name, {}, kernel::active_isa(), kernel::isa_chosen_at_run_time};
    int out_depth = 0;
    detail::planner<P>{out, &out_depth}(e, 0);
    return out;
  }
}

}  // namespace argus
