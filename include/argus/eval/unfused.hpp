// argus/eval/unfused.hpp -- evaluation layer: the unfused evaluator, the specification.
//
// Evaluates every node in order and materialises its result: the projections, the split
// copies, the (seq_q × seq_kv) scores of every head, the masked scores, the softmax, the
// weighted sums and the merged heads. It is a fair baseline, not a naive one: products go
// through the cache-blocked, register-blocked kernel::gemm, rows of softmax through the
// vectorised kernel::softmax_rows, and independent (batch, head) pairs or row blocks are
// spread over argus::num_threads() threads, so fused-vs-unfused measures fusion only.
//
// unfused_step(e, ev) evaluates one node whose operands are evaluated with ev, the caller's
// evaluator: under the fused policy, sub-trees that match a fused pattern still fuse.
#pragma once

#include <argus/eval/materialized.hpp>
#include <argus/expr/attention.hpp>
#include <argus/kernel/gemm.hpp>
#include <argus/kernel/instances.hpp>
#include <argus/kernel/parallel.hpp>
#include <argus/kernel/softmax_rows.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace argus::detail {

/// Rows per task of a row-blocked product over `rows` rows on `threads` threads: one block per
/// thread (each gemm call packs all the columns of the weight it is given, so fewer, taller
/// blocks are cheaper), at least 16 rows.
inline std::size_t rows_per_task(std::size_t rows,
                                 std::size_t threads = std::max<std::size_t>(1, num_threads())) {
  const std::size_t per = (rows + threads - 1) / threads;
  return std::max<std::size_t>(16, (per + 15) / 16 * 16);
}

/// How a projection's product, C (rows × units · unit_cols) = x · W, is shared out over
/// `threads`: row_blocks blocks of rows_per rows times `groups` groups of units_per units of
/// columns (a unit: one head's d_k columns, or one register panel), one task each. Every task
/// copies its columns of W into panels and its rows of x into slivers, once per k block, so a
/// split into r row blocks and g groups copies r · cols + g · rows elements per k: with rows
/// fewer than the columns (short sequences) a row split makes every thread copy all of W, a
/// column split each thread its share (on 16 threads at 128 rows, 16 copies of W against 1).
/// (W packed once, `w_packed`, is read in place: only x is copied, and rows are split.) Among
/// the splits that use the threads as well as any (tasks / ⌈tasks / threads⌉ largest), the
/// one that copies least; a tie keeps the row split. `align`: units_per is rounded up to a
/// multiple of it where that loses no thread (heads whose first column starts a panel of
/// packed weights). `batch` independent products of this shape are shared out together
/// (batch · row_blocks · groups tasks): 3 of them on 2 threads split their rows in two.
struct product_split {
  std::size_t rows_per, row_blocks, units_per, groups;
  std::size_t tasks() const noexcept { return row_blocks * groups; }
};

inline product_split split_product(std::size_t rows, std::size_t units, std::size_t unit_cols,
                                   std::size_t threads, bool w_packed, std::size_t align = 1,
                                   std::size_t batch = 1) {
  threads = std::max<std::size_t>(1, threads);
  if (rows == 0 || units == 0 || batch == 0) return {16, 0, 1, 0};  // no task
  product_split best{rows_per_task(rows, 1), 1, units, 1};
  double best_speed = 0, best_copies = 0;
  for (std::size_t g = 1; g <= std::min(threads, units); ++g) {
    std::size_t per_g = (units + g - 1) / g;
    const std::size_t aligned = (per_g + align - 1) / align * align;
    if ((units + aligned - 1) / aligned == (units + per_g - 1) / per_g) per_g = aligned;
    const std::size_t groups = (units + per_g - 1) / per_g;
    // Row blocks per product: enough for the threads with the batch, or without it.
    for (const std::size_t want :
         {(threads + groups * batch - 1) / (groups * batch), (threads + groups - 1) / groups}) {
      const std::size_t rows_per = rows_per_task(rows, want);
      const std::size_t row_blocks = (rows + rows_per - 1) / rows_per;
      const std::size_t tasks = batch * row_blocks * groups;
      const std::size_t rounds = (tasks + threads - 1) / threads;  // tasks per thread, at most
      const double speed = double(tasks) / double(rounds);
      const double copies =
          (w_packed ? 0.0 : double(row_blocks) * double(units * unit_cols)) + double(groups * rows);
      if (speed > best_speed || (speed == best_speed && copies < best_copies)) {
        best = {rows_per, row_blocks, per_g, groups};
        best_speed = speed, best_copies = copies;
      }
    }
  }
  return best;
}

/// v's elements, in row-major order, written to out (v.size() of them).
template <class T, Shape S>
void write_row_major(const tensor_view<const T, S>& v, T* out) {
  if (v.layout().is_row_major()) {
    std::copy_n(v.data(), v.size(), out);
  } else if constexpr (S::rank() == 3) {
    for (std::size_t a = 0; a < v.extent(0); ++a)
      for (std::size_t b = 0; b < v.extent(1); ++b)
        for (std::size_t c = 0; c < v.extent(2); ++c) *out++ = v(a, b, c);
  } else if constexpr (S::rank() == 4) {
    for (std::size_t a = 0; a < v.extent(0); ++a)
      for (std::size_t b = 0; b < v.extent(1); ++b)
        for (std::size_t c = 0; c < v.extent(2); ++c)
          for (std::size_t d = 0; d < v.extent(3); ++d) *out++ = v(a, b, c, d);
  } else if constexpr (S::rank() == 2) {  // a weight read through a view: W's transpose, say
    for (std::size_t a = 0; a < v.extent(0); ++a)
      for (std::size_t b = 0; b < v.extent(1); ++b) *out++ = v(a, b);
  } else {
    static_assert(S::rank() == 1, "argus: write_row_major() handles ranks 1 to 4");
    for (std::size_t a = 0; a < v.extent(0); ++a) *out++ = v(a);
  }
}

/// A row-major, unit-stride copy of v if v is not already one (kernels need unit stride).
template <class T, Shape S>
materialized<T, S> contiguous(materialized<T, S>&& m) {
  if (m.view.layout().is_row_major()) return std::move(m);
  auto r = allocate<T>(m.view.shape());
  write_row_major(m.view, r.mutable_data());
  return r;
}

// --- leaves ---------------------------------------------------------------------------

template <class T, Shape S, class Ev>
materialized<std::remove_const_t<T>, S> unfused_step(const leaf<T, S>& e, const Ev&) {
  check_leaf_storage("argus::evaluate", e);
  auto m = borrow<std::remove_const_t<T>>(tensor_view<const std::remove_const_t<T>, S>(e.view));
  m.watch = e.watch;  // a tape that keeps m checks it again before it reads m (grad/training.hpp)
  return m;
}

// --- x·W + b ----------------------------------------------------------------------------

/// The gemm panels operand W carries: a packed_weight's leaf carries them, nothing else does.
template <class W>
packed_panels<typename W::value_type> packed_panels_of(const W& w) noexcept {
  if constexpr (requires { w.packed; })
    return w.packed;
  else
    return {};
}

/// f(r0, m, c0, n) for each task of split_product over a (rows × cols) product, on the
/// threads: rows [r0, r0 + m) and columns [c0, c0 + n), the column groups whole panels of the
/// running kernels (kernel::gemm_panel_width) but the last. w_packed: B is read from panels
/// packed once (only A is copied per task).
template <class T, class F>
void parallel_product(std::size_t rows, std::size_t cols, bool w_packed, F&& f) {
  const std::size_t nr = kernel::gemm_panel_width<T>();
  const product_split split = split_product(rows, (cols + nr - 1) / nr, nr,
                                            std::max<std::size_t>(1, num_threads()), w_packed);
  kernel::parallel_for(split.tasks(), [&](std::size_t t, std::size_t) {
    const std::size_t g = t % split.groups, rb = t / split.groups;
    const std::size_t r0 = rb * split.rows_per, c0 = g * split.units_per * nr;
    f(r0, std::min(split.rows_per, rows - r0), c0, std::min(split.units_per * nr, cols - c0));
  });
}

/// For explain(): how a projection's product reads operand W, when W is a packed_weight ("" when
/// it is not). The condition is kernel::gemm_nn_split_prepacked's: panels of this instruction
/// set's width. (A thread whose group of heads starts inside a panel packs its own columns:
/// split_product gives packed weights groups of heads only where the rows run out, and groups
/// that start on a panel where that loses no thread.)
template <class W>
std::string packed_weight_words(const W& w) {
  using T = typename W::value_type;
  const packed_panels<T> p = packed_panels_of(w);
  if (p.data == nullptr) return {};
  const std::size_t width = kernel::gemm_panel_width<T>();
  if (p.width != width)
    return "; W packed per call: its packed panels are another instruction set's (" +
           std::to_string(p.width) + " columns, not " + std::to_string(width) + ")";
  return "; W's packed panels read in place (kernel::gemm_nn_split_prepacked)";
}

/// The evaluated, unit-stride operands of x·W + b; bias is nullptr without a bias.
template <class X, class W, class B, class Ev>
struct projection_operands {
  using T = typename X::value_type;
  static constexpr bool has_bias = projection<X, W, B>::has_bias;
  materialized<T, typename X::shape_type> x;
  materialized<T, typename W::shape_type> w;
  materialized<T, typename std::conditional_t<has_bias, B, X>::shape_type> b;
  const T* bias = nullptr;

  projection_operands(const projection<X, W, B>& e, const Ev& ev)
      : x(contiguous(ev(e.x))), w(contiguous(ev(e.w))) {
    if constexpr (has_bias) {
      b = contiguous(ev(e.b));
      bias = b.view.data();
    }
  }
};

template <class X, class W, class B, class Ev>
auto unfused_step(const projection<X, W, B>& e, const Ev& ev) {
  using T = typename X::value_type;
  using node = projection<X, W, B>;
  projection_operands<X, W, B, Ev> in(e, ev);
  const auto& x = in.x;
  const auto& w = in.w;
  const T* bias = in.bias;
  auto r = allocate_result<T>(e, ev, x.view, w.view, in.b.view);
  T* out = r.mutable_data();
  const T* xp = x.view.data();
  const T* wp = w.view.data();
  if constexpr (!node::per_head) {
    // (B*S, Din)·(Din, Dout): one product, shared out by blocks of rows or groups of panels.
    const std::size_t rows = x.view.extent(0) * x.view.extent(1);
    const std::size_t din = x.view.extent(2), dout = r.view.extent(2);
    const auto panels = packed_panels_of(e.w);  // W packed once (packed_weight), or not
    const bool packed = panels.data != nullptr && panels.width == kernel::gemm_panel_width<T>();
    parallel_product<T>(
        rows, dout, packed, [&](std::size_t r0, std::size_t m, std::size_t c0, std::size_t n) {
          kernel::gemm_nn_split_prepacked<T>(
              m, n, din, T(1), xp + r0 * din, din, wp + c0, dout, panels.data, panels.width, dout,
              c0, out + r0 * dout + c0, dout, n, 0, bias ? bias + c0 : nullptr, false);
        });
  } else {
    // Per head h: x (or x's head h) (S, Din) · W[h] (Din, DK) -> out[b][h] (S, DK).
    const std::size_t batch = r.view.extent(0), heads = r.view.extent(1);
    const std::size_t seq = r.view.extent(2), dk = r.view.extent(3);
    const std::size_t din = w.view.extent(1);
    kernel::parallel_for(batch * heads, [&](std::size_t t, std::size_t) {
      const std::size_t b = t / heads, h = t % heads;
      const T* xs = node::split_input ? xp + (b * heads + h) * seq * din : xp + b * seq * din;
      kernel::gemm_nn<T>(seq, dk, din, T(1), xs, din, wp + h * din * dk, dk,
                         out + (b * heads + h) * seq * dk, dk, bias ? bias + h * dk : nullptr);
    });
  }
  return r;
}

// --- split and merge heads: materialised copies ----------------------------------------

template <std::size_t H, class X, class Ev>
auto unfused_step(const split_heads_node<H, X>& e, const Ev& ev) {
  using T = typename X::value_type;
  auto x = ev(e.x);
  // The split view keeps x's storage: when the split layout is already row-major (one
  // position of a row-major x) it is returned as is, and it must not dangle.
  const auto l = split_layout<H>(x.view.layout());
  auto split = relayout(std::move(x), l);
  if (split.view.layout().is_row_major()) return split;
  auto r = allocate_result<T>(e, ev, split.view);  // as the root: evaluate's out itself
  write_row_major(split.view, r.mutable_data());
  return r;
}

template <class X, class Ev>
auto unfused_step(const merge_heads_node<X>& e, const Ev& ev) {
  using T = typename X::value_type;
  auto x = ev(e.x);
  auto r = allocate_result<T>(e, ev, x.view);  // as the root: evaluate's out itself
  T* out = r.mutable_data();
  const auto& v = x.view;
  const std::size_t batch = v.extent(0), heads = v.extent(1), seq = v.extent(2), d = v.extent(3);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t s = 0; s < seq; ++s)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t j = 0; j < d; ++j) *out++ = v(b, h, s, j);
  return r;
}

// --- scores, masks, softmax, weighted sum ----------------------------------------------

template <class Q, class K, class Ev>
auto unfused_step(const scores_node<Q, K>& e, const Ev& ev) {
  using T = typename Q::value_type;
  auto q = contiguous(ev(e.q));
  auto k = contiguous(ev(e.k));
  auto r = allocate_result<T>(e, ev, q.view, k.view);  // as the root: evaluate's out itself
  const std::size_t batch = q.view.extent(0), heads = q.view.extent(1), sq = q.view.extent(2);
  const std::size_t dk = q.view.extent(3), kvh = k.view.extent(1), skv = k.view.extent(2);
  const std::size_t group = heads / kvh;
  T* out = r.mutable_data();
  kernel::parallel_for(batch * heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / heads, h = t % heads, g = h / group;
    kernel::gemm_nt<T>(sq, skv, dk, e.scale, q.view.data() + t * sq * dk, dk,
                       k.view.data() + (b * kvh + g) * skv * dk, dk, out + t * sq * skv, skv);
  });
  return r;
}

/// The scores as a writable, owned, row-major result (copied if they are borrowed; kept where
/// they were written into evaluate's output).
template <class T, Shape S>
materialized<T, S> owned(materialized<T, S>&& m) {
  m = contiguous(std::move(m));
  if (m.owns_storage() || m.destination != nullptr) return std::move(m);
  auto r = allocate<T>(m.view.shape());
  std::copy_n(m.view.data(), m.view.size(), r.mutable_data());
  return r;
}

// Whether a mask of a chain ignores key j for query i of head h of batch item b. Boolean
// masks (causal, ignore_keys, ignore_where, ...) ignore a pair whatever its logit and whatever
// an additive mask adds to it, in any order; the weighted sum also leaves out keys an additive
// mask sets to -inf (docs/reference/semantics.md).
template <bool WithAdditive, class E>
bool chain_ignores(const E&, std::size_t, std::size_t, std::size_t, std::size_t) {
  return false;
}
template <bool WithAdditive, class E, class M>
bool chain_ignores(const masked_node<E, M>& m, std::size_t b, std::size_t h, std::size_t i,
                   std::size_t j) {
  constexpr bool counted = WithAdditive || boolean_mask_kind<M>;
  return (counted && mask_ignores(m.mask, b, h, i, j)) ||
         chain_ignores<WithAdditive>(m.scores, b, h, i, j);
}

/// Masks row i of head h of batch item b (skv logits) with mask m: a boolean mask sets the
/// pairs it ignores to -inf; an additive mask adds to every pair no boolean mask of the inner
/// chain ignores.
template <class T, class M, class E>
void apply_mask_row(T* row, std::size_t b, std::size_t h, std::size_t i, std::size_t skv,
                    const M& m, const E& inner) {
  if constexpr (boolean_mask_kind<M>) {
    for (std::size_t j = 0; j < skv; ++j)
      if (m.ignores(b, h, i, j)) row[j] = -std::numeric_limits<T>::infinity();
  } else {
    for (std::size_t j = 0; j < skv; ++j)
      if (!chain_ignores<false>(inner, b, h, i, j)) row[j] += m.added(b, h, i, j);
  }
}

/// Whether a chain of scores is masked (a masked_node), rather than bare scores.
template <class S>
struct is_masked_node : std::false_type {};
template <class E, class M>
struct is_masked_node<masked_node<E, M>> : std::true_type {};

/// The views of every mask of a chain of scores (mask_operands of each), innermost last.
template <class S>
std::tuple<> chain_mask_operands(const S&) {
  return {};
}
template <class E, class M>
auto chain_mask_operands(const masked_node<E, M>& m) {
  return std::tuple_cat(mask_operands(m.mask), chain_mask_operands(m.scores));
}

template <class E, class M, class Ev>
auto unfused_step(const masked_node<E, M>& e, const Ev& ev) {
  check_mask_storage(e.mask);
  // As the root: the scores written into out and masked there, unless out shares a byte with
  // a mask of the chain (apply_mask_row reads them while it writes).
  auto s = owned(std::apply(
      [&](const auto&... mask) { return evaluate_in_place_operand(e, e.scores, ev, mask...); },
      chain_mask_operands(e)));
  using T = typename E::value_type;
  const std::size_t batch = s.view.extent(0), heads = s.view.extent(1);
  const std::size_t sq = s.view.extent(2), skv = s.view.extent(3);
  T* p = s.mutable_data();
  kernel::parallel_for(batch * heads, [&](std::size_t t, std::size_t) {
    for (std::size_t i = 0; i < sq; ++i)
      apply_mask_row(p + (t * sq + i) * skv, t / heads, t % heads, i, skv, e.mask, e.scores);
  });
  return s;
}

template <class E, class Ev>
auto unfused_step(const softmax_node<E>& e, const Ev& ev) {
  auto s = owned(evaluate_in_place_operand(e, e.scores, ev));  // as the root: in out itself
  const std::size_t planes = s.view.extent(0) * s.view.extent(1);
  const std::size_t sq = s.view.extent(2), skv = s.view.extent(3);
  auto* p = s.mutable_data();
  kernel::parallel_for(planes, [&](std::size_t t, std::size_t) {
    kernel::softmax_rows(p + t * sq * skv, sq, skv, skv);
  });
  return s;
}

/// P·V for every (batch, head). With `ignores(b, h, i, j)` (weights that are the softmax of a
/// mask chain), a key the chain ignores contributes nothing, whatever its V row holds: V rows
/// that are not finite are zeroed in a copy for the product, and p · v is added back where
/// no mask ignores the key. Finding them costs one pass over V, against seq_q passes of the
/// product. `masks` holds the views of the chain's masks, which `ignores` reads.
template <class P, class V, class Ev, class Ignores, class... Masks>
auto weighted_sum(const attend_node<P, V>& e, const Ev& ev, const Ignores* ignores,
                  const std::tuple<Masks...>& masks) {
  using T = typename P::value_type;
  auto p = contiguous(ev(e.weights));
  auto v = contiguous(ev(e.v));
  // Into evaluate's output where it is the root and shares no byte with P, V or a mask that
  // `ignores` reads while the products write.
  auto r = std::apply(
      [&](const auto&... mask) { return allocate_result<T>(e, ev, p.view, v.view, mask...); },
      masks);
  const std::size_t batch = p.view.extent(0), heads = p.view.extent(1), sq = p.view.extent(2);
  const std::size_t skv = p.view.extent(3), kvh = v.view.extent(1), dv = v.view.extent(3);
  const std::size_t group = heads / kvh;
  T* out = r.mutable_data();
  const T* vp = v.view.data();
  std::vector<std::vector<std::size_t>> unclean;  // per (b, g): the V rows that are not finite
  std::vector<T> clean;
  if (ignores != nullptr) {
    bool any = false;
    unclean.resize(batch * kvh);
    for (std::size_t pg = 0; pg < batch * kvh; ++pg) {
      const T* plane = vp + pg * skv * dv;
      if (kernel::all_finite(plane, skv * dv)) continue;
      for (std::size_t j = 0; j < skv; ++j)
        if (!kernel::all_finite(plane + j * dv, dv)) unclean[pg].push_back(j), any = true;
    }
    if (any) {
      clean.assign(vp, vp + v.view.size());
      for (std::size_t pg = 0; pg < batch * kvh; ++pg)
        for (std::size_t j : unclean[pg]) std::fill_n(clean.data() + (pg * skv + j) * dv, dv, T(0));
      vp = clean.data();
    } else {
      unclean.clear();
    }
  }
  kernel::parallel_for(batch * heads, [&](std::size_t t, std::size_t) {
    const std::size_t b = t / heads, h = t % heads, g = h / group;
    const T* pt = p.view.data() + t * sq * skv;
    T* ot = out + t * sq * dv;
    kernel::gemm_nn<T>(sq, dv, skv, T(1), pt, skv, vp + (b * kvh + g) * skv * dv, dv, ot, dv);
    if (unclean.empty()) return;
    for (std::size_t j : unclean[b * kvh + g]) {
      const T* vj = v.view.data() + ((b * kvh + g) * skv + j) * dv;
      for (std::size_t i = 0; i < sq; ++i) {
        if ((*ignores)(b, h, i, j)) continue;
        const T w = pt[i * skv + j];
        for (std::size_t c = 0; c < dv; ++c) ot[i * dv + c] += w * vj[c];
      }
    }
  });
  return r;
}

template <class P, class V, class Ev>
auto unfused_step(const attend_node<P, V>& e, const Ev& ev) {
  using none = bool (*)(std::size_t, std::size_t, std::size_t, std::size_t);
  return weighted_sum(e, ev, static_cast<const none*>(nullptr), std::tuple<>{});
}

/// attend(softmax(mask*(s)), v): keys the masks ignore contribute nothing.
template <class S, class V, class Ev>
auto unfused_step(const attend_node<softmax_node<S>, V>& e, const Ev& ev) {
  if constexpr (is_masked_node<S>::value) {
    const auto& chain = e.weights.scores;
    const auto ignores = [&chain](std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
      return chain_ignores<true>(chain, b, h, i, j);
    };
    return weighted_sum(e, ev, &ignores, chain_mask_operands(chain));
  } else {  // no mask: nothing is ignored
    using none = bool (*)(std::size_t, std::size_t, std::size_t, std::size_t);
    return weighted_sum(e, ev, static_cast<const none*>(nullptr), std::tuple<>{});
  }
}

}  // namespace argus::detail
