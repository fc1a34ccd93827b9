// argus/eval/fused_attention.hpp -- evaluation layer: the fused attention patterns.
//
//   fused_split_heads_view      split_heads<H>(x)                   -> a strided view of x, no copy
//   fused_attention_core        attend(softmax(mask*(scores(q, k))), v)
//                               -> one loop nest (kernel::flash_attention): query tiles × key
//                                  tiles, online softmax, no (seq_q × seq_kv) buffer
//   fused_attention_merged      merge_heads(attend(softmax(...), v)) -> the same loop nest,
//                               writing each head straight into its columns of the merged
//                               (batch, seq, heads·d_v) result: no merge copy
// mask* is any chain of masks of the kinds fused_mask knows (causal, ignore_keys,
// ignore_where, add_to_scores), at most one of each; another chain does not match and runs
// unfused.
#pragma once

#include <argus/eval/materialized.hpp>
#include <argus/eval/select.hpp>
#include <argus/eval/unfused.hpp>
#include <argus/expr/attention.hpp>
#include <argus/kernel/flash_attention.hpp>
#include <argus/kernel/instances.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>

namespace argus::detail {

// --- The mask kinds the kernels compute ---------------------------------------------------

/// Where a mask kind goes in kernel::attention_problem, and how: fused_mask<M> has `slot`
/// (one mask of a slot per chain: each slot is one set of the problem's fields), `set(m, p,
/// keep)`, which fills them (unit-stride copies kept alive in `keep`), and `trains`, whether
/// the backward kernels compute it too. The built-in kinds are specialisations, read from
/// memory or computed (causal); any other kind (expr/mask.hpp's Mask) goes to the loop nest
/// as code (kernel::code_mask: its ignores or added, called on each tile of pairs) and does
/// not train (masks_have_training_kernels). A chain with two kinds of one slot (two kinds of
/// one's own, say) evaluates its attention core with the unfused steps (the pattern below does
/// not match it). To read a new kind from memory instead, give the kernels its fields and add
/// one specialisation here.
enum class mask_slot { causal, keys, pairs, additive, code };

/// The unit-stride copies of the masks read from memory, alive while the kernels run.
template <class T>
struct mask_storage {
  materialized<std::uint8_t, shape<batch<>, seq<>>> keys;
  materialized<std::uint8_t, shape<seq<>, seq<>>> pairs;
  materialized<T, shape<seq<>, seq<>>> additive;
};

/// kernel::code_mask's apply for a kind M of one's own, on the object at `context`.
template <class T, class M>
void apply_code_mask(const void* context, std::size_t b, const std::size_t* head,
                     const std::size_t* query, std::size_t rows, std::size_t j0, std::size_t n,
                     T* s, std::size_t row_stride, std::size_t key_stride) {
  const M& m = *static_cast<const M*>(context);
  const auto pair = [&](std::size_t r, std::size_t j) {
    T& x = s[r * row_stride + j * key_stride];
    if constexpr (boolean_mask_kind<M>) {
      if (m.ignores(b, head[r], query[r], j0 + j)) x = -std::numeric_limits<T>::infinity();
    } else {
      x += static_cast<T>(m.added(b, head[r], query[r], j0 + j));
    }
  };
  // The contiguous index innermost (the rows of the forward's tiles, queries on lanes; the
  // keys of the backward's rows), so that what the kind computes of the other is hoisted.
  if (row_stride < key_stride) {
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t r = 0; r < rows; ++r) pair(r, j);
  } else {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < n; ++j) pair(r, j);
  }
}

/// kernel::code_mask's ignores_tile for a kind M with ignores_block: the rows in runs of one
/// head and consecutive queries, each run one block.
template <class M>
bool skip_code_mask(const void* context, std::size_t b, const std::size_t* head,
                    const std::size_t* query, std::size_t rows, std::size_t j0, std::size_t n) {
  const M& m = *static_cast<const M*>(context);
  for (std::size_t r0 = 0, r1 = 0; r0 < rows; r0 = r1) {
    r1 = r0 + 1;
    while (r1 < rows && head[r1] == head[r0] && query[r1] == query[r1 - 1] + 1) ++r1;
    if (!m.ignores_block(b, head[r0], query[r0], query[r1 - 1] + 1, j0, j0 + n)) return false;
  }
  return true;
}

template <class M>
struct fused_mask {
  static constexpr bool supported = is_mask_kind<M>(), trains = false;
  static constexpr mask_slot slot = mask_slot::code;
  template <class T>
  static void set(const M& m, kernel::attention_problem<T>& p, mask_storage<T>&) {
    p.code.context = &m;
    p.code.apply = &apply_code_mask<T, M>;
    p.code.adds = additive_mask_kind<M>;
    if constexpr (ignores_blocks<M>) p.code.ignores_tile = &skip_code_mask<M>;
  }
};

template <class M, Shape S>
tensor_view<const std::uint8_t,
            shape<rebind_axis<axis_t<S, 0>, dyn>, rebind_axis<axis_t<S, 1>, dyn>>>
as_bytes(const tensor_view<const M, S>& v) {
  // bool is one byte holding 0 or 1 on every ABI argus supports.
  static_assert(sizeof(M) == 1);
  using R = shape<rebind_axis<axis_t<S, 0>, dyn>, rebind_axis<axis_t<S, 1>, dyn>>;
  const R r(v.extent(0), v.extent(1));
  return {reinterpret_cast<const std::uint8_t*>(v.data()),
          layout<R>{r, {v.stride(0), v.stride(1)}}};
}

template <>
struct fused_mask<causal_mask> {
  static constexpr bool supported = true, trains = true;
  static constexpr mask_slot slot = mask_slot::causal;
  template <class T>
  static void set(const causal_mask& m, kernel::attention_problem<T>& p, mask_storage<T>&) {
    // The same pairs with query positions, i + offset, and window starts small enough to be
    // exact in T.
    const causal_mask c = m.fitted(p.seq_q, p.seq_kv);
    p.causal = true;
    p.causal_offset = c.offset;
    p.causal_window = c.window;
  }
};
template <class M, class S>
struct fused_mask<ignore_keys_mask<M, S>> {
  static constexpr bool supported = true, trains = true;
  static constexpr mask_slot slot = mask_slot::keys;
  template <class T>
  static void set(const ignore_keys_mask<M, S>& m, kernel::attention_problem<T>& p,
                  mask_storage<T>& keep) {
    keep.keys = contiguous(borrow<std::uint8_t>(as_bytes(m.keys.view)));
    p.key_ignore = keep.keys.view.data();
    p.key_ignore_batch = keep.keys.view.stride(0);
  }
};
template <class M, class S>
struct fused_mask<ignore_mask<M, S>> {
  static constexpr bool supported = true, trains = true;
  static constexpr mask_slot slot = mask_slot::pairs;
  template <class T>
  static void set(const ignore_mask<M, S>& m, kernel::attention_problem<T>& p,
                  mask_storage<T>& keep) {
    keep.pairs = contiguous(borrow<std::uint8_t>(as_bytes(m.pairs.view)));
    p.ignore = keep.pairs.view.data();
    p.ignore_row = keep.pairs.view.stride(0);
  }
};
template <class A, class S>
struct fused_mask<additive_mask<A, S>> {
  static constexpr bool supported = true, trains = true;
  static constexpr mask_slot slot = mask_slot::additive;
  template <class T>
  static void set(const additive_mask<A, S>& m, kernel::attention_problem<T>& p,
                  mask_storage<T>& keep) {
    const auto& v = m.values.view;
    using R = shape<seq<>, seq<>>;
    keep.additive = contiguous(borrow<T>(tensor_view<const T, R>(
        v.data(), layout<R>{R(v.extent(0), v.extent(1)), {v.stride(0), v.stride(1)}})));
    p.additive = keep.additive.view.data();
    p.add_row = keep.additive.view.stride(0);
  }
};

// --- Recognising mask*(scores(q, k)) -----------------------------------------------------

/// A chain mask*(scores(q, k)) (`chain`): `kernels` when fused_mask supports every kind of it,
/// `one_per_slot` when no two of its masks share a slot, ok when both hold (the fused
/// patterns match it); `trains` when the backward kernels compute every kind of it too.
template <class E>
struct mask_chain {
  static constexpr bool chain = false, ok = false, kernels = false, one_per_slot = false,
                        trains = false;
};

template <class Q, class K>
struct mask_chain<scores_node<Q, K>> {
  static constexpr bool chain = true, kernels = true, one_per_slot = true, ok = true, trains = true;
  static constexpr int masks_in(mask_slot) { return 0; }
  using scores_type = scores_node<Q, K>;
  static const scores_type& scores(const scores_type& s) noexcept { return s; }
};

/// Masks over something other than scores(q, k) (scores given as a tensor): no chain.
template <class E, class M, bool Chain = mask_chain<E>::chain>
struct masks_over {
  static constexpr bool chain = false, ok = false, kernels = false, one_per_slot = false,
                        trains = false;
};
template <class E, class M>
struct mask_chain<masked_node<E, M>> : masks_over<E, M> {};

template <class E, class M>
struct masks_over<E, M, true> {
  using inner = mask_chain<E>;
  static constexpr bool chain = true;
  static constexpr bool kernels = inner::kernels && fused_mask<M>::supported;
  static constexpr bool trains = kernels && inner::trains && fused_mask<M>::trains;
  static constexpr int masks_in(mask_slot s) {
    if constexpr (kernels)
      return inner::masks_in(s) + (fused_mask<M>::slot == s ? 1 : 0);
    else
      return 0;
  }
  static constexpr bool one_per_slot =
      kernels && masks_in(mask_slot::causal) <= 1 && masks_in(mask_slot::keys) <= 1 &&
      masks_in(mask_slot::pairs) <= 1 && masks_in(mask_slot::additive) <= 1 &&
      masks_in(mask_slot::code) <= 1;
  static constexpr bool ok = kernels && one_per_slot;
  using scores_type = typename inner::scores_type;
  static const scores_type& scores(const masked_node<E, M>& m) noexcept {
    return inner::scores(m.scores);
  }
};

template <class T, class E>
void set_masks(const E&, kernel::attention_problem<T>&, mask_storage<T>&) {}  // scores: no mask

/// Sets the problem's mask fields from the chain (every kind of it has a fused_mask).
template <class T, class E, class M>
void set_masks(const masked_node<E, M>& m, kernel::attention_problem<T>& p, mask_storage<T>& keep) {
  set_masks(m.scores, p, keep);
  check_mask_storage(m.mask);
  fused_mask<M>::set(m.mask, p, keep);
}

// --- The patterns -------------------------------------------------------------------------

template <class E>
struct attention_core_traits {
  static constexpr bool ok = false, untrained_masks = false;
};
template <class E>
struct is_split_stacked_projection : std::false_type {};
template <std::size_t H, class X, class W, class B>
struct is_split_stacked_projection<split_heads_node<H, projection<X, W, B>>>
    : std::bool_constant<!projection<X, W, B>::per_head> {};
template <class E>
struct is_split_heads : std::false_type {};
template <std::size_t H, class X>
struct is_split_heads<split_heads_node<H, X>> : std::true_type {};
template <class S, class V>
struct attention_core_traits<attend_node<softmax_node<S>, V>> {
  static constexpr bool ok = mask_chain<S>::ok;
  /// attend(softmax(mask*(scores(q, k))), v) with a mask kind the backward kernels do not
  /// compute (a kind of one's own).
  static constexpr bool untrained_masks = mask_chain<S>::chain && !mask_chain<S>::trains;
  using masked_scores = S;
};

template <class E>
struct is_merged_attention_core : std::false_type {};
template <class X>
struct is_merged_attention_core<merge_heads_node<X>>
    : std::bool_constant<attention_core_traits<X>::ok> {};

/// Where run_attention_core writes: head h of query i of item b at
/// data + b*batch + h*head + i*row.
template <class T>
struct core_output {
  T* data;
  std::size_t batch, head, row;
};

/// Runs attend(softmax(mask*(scores(q, k))), v) with kernel::flash_attention. Once the
/// operands are evaluated and checked, out(reads...) is given the views the loop nest reads
/// (q, k, v and the masks) and returns where to write (a core_output<T>).
template <class S, class V, class Ev, class Out>
void run_attention_core(const attend_node<softmax_node<S>, V>& e, const Ev& ev, Out&& out) {
  using T = typename attend_node<softmax_node<S>, V>::value_type;
  const auto& sc = mask_chain<S>::scores(e.weights.scores);
  auto unit_inner = [](auto m) {  // by value: ev(...) returns a temporary
    return m.view.stride(3) == 1 ? std::move(m) : contiguous(std::move(m));
  };
  auto q = unit_inner(ev(sc.q));
  auto k = unit_inner(ev(sc.k));
  auto v = unit_inner(ev(e.v));
  kernel::attention_problem<T> p{};
  p.batch = q.view.extent(0), p.heads = q.view.extent(1), p.kv_heads = k.view.extent(1);
  p.seq_q = q.view.extent(2), p.seq_kv = k.view.extent(2);
  p.d_k = q.view.extent(3), p.d_v = v.view.extent(3);
  p.q = q.view.data(), p.q_batch = q.view.stride(0), p.q_head = q.view.stride(1),
  p.q_row = q.view.stride(2);
  p.k = k.view.data(), p.k_batch = k.view.stride(0), p.k_head = k.view.stride(1),
  p.k_row = k.view.stride(2);
  p.v = v.view.data(), p.v_batch = v.view.stride(0), p.v_head = v.view.stride(1),
  p.v_row = v.view.stride(2);
  p.scale = sc.scale;
  mask_storage<T> keep;
  set_masks(e.weights.scores, p, keep);
  // What the loop nest reads while it writes: the operands, the masks' copies, and the views
  // the chain's kinds read themselves (a kind of one's own reads its operands() as it runs).
  const core_output<T> o =
      std::apply(out, std::tuple_cat(std::tie(q.view, k.view, v.view, keep.keys.view,
                                              keep.pairs.view, keep.additive.view),
                                     chain_mask_operands(e.weights.scores)));
  p.o = o.data, p.o_batch = o.batch, p.o_head = o.head, p.o_row = o.row;
  kernel::flash_attention(p);
}

template <Shape S>
std::string extents_string(const S& s);
template <class E>
std::size_t result_bytes(const E& e);

template <class E>
void mask_names(const E&, std::string&) {}
template <class E, class M>
void mask_names(const masked_node<E, M>& m, std::string& out) {
  mask_names(m.scores, out);
  out += out.empty() ? "" : " + ";
  out += m.mask.name();
}

/// One line on the fused loop nest of attend(softmax(mask*(scores(q, k))), v).
template <class S, class V>
std::string describe_attention_core(const attend_node<softmax_node<S>, V>& e, const char* writes) {
  using T = typename attend_node<softmax_node<S>, V>::value_type;
  const auto& sc = mask_chain<S>::scores(e.weights.scores);
  const auto qs = sc.q.shape();
  const auto ks = sc.k.shape();
  kernel::attention_problem<T> p{};
  p.batch = qs.extent(0), p.heads = qs.extent(1), p.kv_heads = ks.extent(1);
  p.seq_q = qs.extent(2), p.seq_kv = ks.extent(2), p.d_k = qs.extent(3);
  p.d_v = e.v.shape().extent(3);
  const auto tiles = kernel::flash_attention_tiles(p);
  std::string masks;
  mask_names(e.weights.scores, masks);
  return "attention core as one loop nest (kernel::flash_attention): query tiles of " +
         std::to_string(std::min(tiles.q_tile, p.seq_q)) + " × key tiles of " +
         std::to_string(std::min(tiles.k_tile, p.seq_kv)) + ", online softmax" +
         (masks.empty() ? "" : ", masks " + masks) + ", " +
         std::to_string(kernel::flash_attention_scratch_bytes(p)) +
         " bytes of scratch per thread, no (seq_q × seq_kv) buffer; writes " + writes;
}

template <class S, class V, class Planner>
void describe_core_operands(const attend_node<softmax_node<S>, V>& e, const Planner& p, int depth) {
  const auto& sc = mask_chain<S>::scores(e.weights.scores);
  p(sc.q, depth);
  p(sc.k, depth);
  p(e.v, depth);
}

}  // namespace argus::detail

namespace argus {

/// split_heads<H>(x·W + b), stacked weight: one product over all heads' columns
/// (kernel::gemm_nn_split), each head's d_k columns of W landing in its own (seq, d_k)
/// block, so the projection writes the (batch, head, seq, d_k) layout directly -- no copy,
/// and rows d_k apart rather than h·d_k apart, which keeps the loop nest's K and V tiles
/// from crowding a few L1 sets. (It was one product per head until 2026-11-23: x was then
/// packed once per head, and GPT-2 XL's 25 heads ran fused slower than unfused.)
struct fused_split_heads_projection {
  template <class E>
  static constexpr bool matches = detail::is_split_stacked_projection<E>::value;

  template <std::size_t H, class X, class W, class B, class Ev>
  static auto evaluate(const split_heads_node<H, projection<X, W, B>>& e, const Ev& ev) {
    using T = typename X::value_type;
    detail::projection_operands<X, W, B, Ev> in(e.x, ev);
    const auto& x = in.x;
    const T* bias = in.bias;
    // (B,H,SEQ,D_K); as the root of evaluate(e, fused, out), out itself (allocate_result)
    auto r = detail::allocate_result<T>(e, ev, x.view, in.w.view, in.b.view);
    const std::size_t batch = r.view.extent(0), seq = r.view.extent(2), dk = r.view.extent(3);
    const std::size_t din = x.view.extent(2);
    const T* xp = x.view.data();
    const T* wp = in.w.view.data();
    T* out = r.mutable_data();
    // One product over all heads' columns per block of rows (x's rows are packed once per
    // column block of the gemm, not once per head), each head's d_k columns landing in its
    // own (SEQ, D_K) block: kernel::gemm_nn_split. The threads share out blocks of rows and
    // groups of heads, whichever copies less of x and W (detail::split_product: heads for
    // short sequences, rows for long ones).
    if (batch == 0 || seq == 0) return r;
    const std::size_t threads = std::max<std::size_t>(1, num_threads());
    const auto panels = detail::packed_panels_of(e.x.w);  // W packed once (packed_weight), or not
    // Groups of heads whose first column starts a panel, where that loses no thread: they read
    // packed panels in place (kernel::gemm_nn_split_prepacked).
    const std::size_t nr = kernel::gemm_panel_width<T>();
    const detail::product_split split =
        detail::split_product(seq, H, dk, threads, panels.data != nullptr && panels.width == nr,
                              nr / std::gcd(dk == 0 ? nr : dk, nr), batch);
    const std::size_t per = split.rows_per, row_blocks = split.row_blocks;
    const std::size_t heads_per = split.units_per, groups = split.groups;
    kernel::parallel_for(batch * row_blocks * groups, [&](std::size_t t, std::size_t) {
      const std::size_t g = t % groups, rb = t / groups % row_blocks, b = t / groups / row_blocks;
      const std::size_t s0 = rb * per, m = std::min(per, seq - s0);
      const std::size_t h0 = g * heads_per, nh = std::min(heads_per, H - h0);
      kernel::gemm_nn_split_prepacked<T>(m, nh * dk, din, T(1), xp + (b * seq + s0) * din, din,
                                         wp + h0 * dk, H * dk, panels.data, panels.width, H * dk,
                                         h0 * dk, out + (b * H + h0) * seq * dk + s0 * dk, dk, dk,
                                         seq * dk, bias ? bias + h0 * dk : nullptr, false);
    });
    return r;
  }

  template <std::size_t H, class X, class W, class B, class Planner>
  static void describe(const split_heads_node<H, projection<X, W, B>>& e, const Planner& p,
                       int depth) {
    p.add(
        depth, true,
        "split_heads<" + std::to_string(H) + ">(x·W" +
            (projection<X, W, B>::has_bias ? " + b" : "") +
            "): the product written straight into (B,H,SEQ,D_K) (kernel::gemm_nn_split), no copy" +
            detail::packed_weight_words(e.x.w),
        detail::extents_string(e.shape()), detail::result_bytes(e), true);
    p(e.x.x, depth + 1);
    p(e.x.w, depth + 1);
    if constexpr (projection<X, W, B>::has_bias) p(e.x.b, depth + 1);
  }
};

/// split_heads<H>(x) as a strided view of x's storage: no copy.
struct fused_split_heads_view {
  template <class E>
  static constexpr bool matches = detail::is_split_heads<E>::value;

  template <std::size_t H, class X, class Ev>
  static auto evaluate(const split_heads_node<H, X>& e, const Ev& ev) {
    auto x = ev(e.x);
    const auto l = split_layout<H>(x.view.layout());
    return detail::relayout(std::move(x), l);
  }

  template <std::size_t H, class X, class Planner>
  static void describe(const split_heads_node<H, X>& e, const Planner& p, int depth) {
    p.add(depth, true, "split_heads<" + std::to_string(H) + "> (strided view, no copy)",
          detail::extents_string(e.shape()), 0);
    p(e.x, depth + 1);
  }
};

/// attend(softmax(mask*(scores(q, k))), v) as one loop nest.
struct fused_attention_core {
  template <class E>
  static constexpr bool matches = detail::attention_core_traits<E>::ok;

  template <class E, class Ev>
  static auto evaluate(const E& e, const Ev& ev) {
    using T = typename E::value_type;
    detail::materialized<T, typename E::shape_type> r;
    detail::run_attention_core(e, ev, [&](const auto&... reads) {
      r = detail::allocate_result<T>(e, ev, reads...);
      const auto& l = r.view.layout();  // (B,H,SEQ_Q,D_V) row-major
      return detail::core_output<T>{r.mutable_data(), l.stride[0], l.stride[1], l.stride[2]};
    });
    return r;
  }

  template <class E, class Planner>
  static void describe(const E& e, const Planner& p, int depth) {
    p.add(depth, true, detail::describe_attention_core(e, "(B,H,SEQ_Q,D_V)"),
          detail::extents_string(e.shape()), detail::result_bytes(e), true);
    detail::describe_core_operands(e, p, depth + 1);
  }
};

/// merge_heads(attend(softmax(mask*(scores(q, k))), v)): the loop nest writes the merged layout.
struct fused_attention_merged {
  template <class E>
  static constexpr bool matches = detail::is_merged_attention_core<E>::value;

  template <class X, class Ev>
  static auto evaluate(const merge_heads_node<X>& e, const Ev& ev) {
    using T = typename X::value_type;
    const std::size_t dv = static_extent_v<typename X::shape_type, 3>;
    detail::materialized<T, typename merge_heads_node<X>::shape_type> r;
    detail::run_attention_core(e.x, ev, [&](const auto&... reads) {
      r = detail::allocate_result<T>(e, ev, reads...);  // (B,SEQ_Q,H*D_V)
      const auto& l = r.view.layout();
      return detail::core_output<T>{r.mutable_data(), l.stride[0], dv, l.stride[1]};
    });
    return r;
  }

  template <class X, class Planner>
  static void describe(const merge_heads_node<X>& e, const Planner& p, int depth) {
    p.add(depth, true,
          detail::describe_attention_core(e.x, "the merged (B,SEQ_Q,H*D_V) layout, no merge copy"),
          detail::extents_string(e.shape()), detail::result_bytes(e), true);
    detail::describe_core_operands(e.x, p, depth + 1);
  }
};

namespace detail {
/// The fused policy's table, in priority order (see select.hpp).
template <>
struct patterns_of<fused_policy> {
  using type = pattern_list<fused_attention_merged, fused_attention_core,
                            fused_split_heads_projection, fused_split_heads_view>;
};
}  // namespace detail

}  // namespace argus
