// argus/expr/mask.hpp -- expression layer: masks applied to scores before the softmax.
//
// One polarity for every boolean mask, stated in the names: a true (non-zero) entry means
// "ignore this key" (PyTorch's key_padding_mask and boolean attn_mask convention).
//   causal                      query i may attend key j iff j <= i (top-left aligned)
//   ignore_keys(padding)        padding (batch, seq_kv): padding[b][j] != 0 ignores key j for item b
//   ignore_where(m)             m (seq_q, seq_kv): m[i][j] != 0 ignores key j for query i
//   add_to_scores(a)            a (seq_q, seq_kv) of the value type, added to the scaled logits
//                               (-infinity ignores the key)
// A query whose keys are all ignored attends nothing: its output row is zero, never NaN.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace argus {

/// Query i may attend key j iff j <= i.
struct causal_mask {};
inline constexpr causal_mask causal{};

/// Per batch item, the keys to ignore: (batch, seq_kv), non-zero = ignored.
template <class M, Shape S>
struct ignore_keys_mask {
  leaf<const M, S> keys;
};
/// Per (query, key) pair, whether to ignore it: (seq_q, seq_kv), non-zero = ignored.
template <class M, Shape S>
struct ignore_mask {
  leaf<const M, S> pairs;
};
/// Added to the scaled logits: (seq_q, seq_kv); -infinity ignores the key.
template <class T, Shape S>
struct additive_mask {
  leaf<const T, S> values;
};

/// Element types a boolean mask may have.
template <class M>
concept mask_element_is_bool_or_uint8 = std::is_same_v<M, bool> || std::is_same_v<M, std::uint8_t>;

template <Operand P>
  requires axes_are_batch_seq<shape_of<P>> && mask_element_is_bool_or_uint8<value_type_of<P>>
constexpr ignore_keys_mask<value_type_of<P>, shape_of<P>> ignore_keys(P&& padding) {
  return {as_expression(std::forward<P>(padding))};
}
template <Operand P>
  requires axes_are_seq_seq<shape_of<P>> && mask_element_is_bool_or_uint8<value_type_of<P>>
constexpr ignore_mask<value_type_of<P>, shape_of<P>> ignore_where(P&& m) {
  return {as_expression(std::forward<P>(m))};
}
template <Operand P>
  requires axes_are_seq_seq<shape_of<P>> && value_type_is_float_or_double<value_type_of<P>>
constexpr additive_mask<value_type_of<P>, shape_of<P>> add_to_scores(P&& a) {
  return {as_expression(std::forward<P>(a))};
}

namespace detail {
template <class M> struct is_mask : std::false_type {};
template <> struct is_mask<causal_mask> : std::true_type {};
template <class M, class S> struct is_mask<ignore_keys_mask<M, S>> : std::true_type {};
template <class M, class S> struct is_mask<ignore_mask<M, S>> : std::true_type {};
template <class T, class S> struct is_mask<additive_mask<T, S>> : std::true_type {};

// The static extents a mask constrains; dyn where it constrains nothing. A padding mask
// constrains (batch, seq_kv) through `padding_batch`/`padding_keys`, a pair mask
// (seq_q, seq_kv) through `rows`/`cols`.
struct unconstrained_extents {
  static constexpr std::size_t padding_batch = dyn, padding_keys = dyn, rows = dyn, cols = dyn;
};
template <class M> struct mask_extents : unconstrained_extents {};
template <class M, class S> struct mask_extents<ignore_keys_mask<M, S>> : unconstrained_extents {
  static constexpr std::size_t padding_batch = static_extent_v<S, 0>;
  static constexpr std::size_t padding_keys = static_extent_v<S, 1>;
};
template <class M, class S> struct mask_extents<ignore_mask<M, S>> : unconstrained_extents {
  static constexpr std::size_t rows = static_extent_v<S, 0>, cols = static_extent_v<S, 1>;
};
template <class T, class S> struct mask_extents<additive_mask<T, S>> : unconstrained_extents {
  static constexpr std::size_t rows = static_extent_v<S, 0>, cols = static_extent_v<S, 1>;
};
template <class M> struct mask_value_type { using type = void; };
template <class T, class S> struct mask_value_type<additive_mask<T, S>> { using type = T; };
}  // namespace detail

/// causal, ignore_keys(...), ignore_where(...) or add_to_scores(...).
template <class M>
concept Mask = detail::is_mask<M>::value;

template <Expression E, Mask M>
struct masked_node {
  static constexpr bool is_expression = true;
  using value_type = typename E::value_type;
  using shape_type = typename E::shape_type;
  E scores;
  M mask;
  shape_type shape() const { return scores.shape(); }
};

namespace detail {
inline void check_mask_extents(const causal_mask&, std::size_t, std::size_t, std::size_t) {}
template <class M, class S>
void check_mask_extents(const ignore_keys_mask<M, S>& m, std::size_t b, std::size_t, std::size_t kv) {
  const auto s = m.keys.shape();
  check_extents_agree("argus::mask(ignore_keys)", "the batch of the padding mask", s.extent(0),
                      "the batch of the scores", b);
  check_extents_agree("argus::mask(ignore_keys)", "the length of the padding mask", s.extent(1),
                      "seq_kv", kv);
}
template <class Pairs>
void check_pair_mask_extents(const char* op, const Pairs& p, std::size_t q, std::size_t kv) {
  const auto s = p.shape();
  check_extents_agree(op, "the mask's row count", s.extent(0), "seq_q", q);
  check_extents_agree(op, "the mask's column count", s.extent(1), "seq_kv", kv);
}
template <class M, class S>
void check_mask_extents(const ignore_mask<M, S>& m, std::size_t, std::size_t q, std::size_t kv) {
  check_pair_mask_extents("argus::mask(ignore_where)", m.pairs, q, kv);
}
template <class T, class S>
void check_mask_extents(const additive_mask<T, S>& m, std::size_t, std::size_t q, std::size_t kv) {
  check_pair_mask_extents("argus::mask(add_to_scores)", m.values, q, kv);
}

/// Throws shape_error when a mask reads a moved-from tensor (checked when it is evaluated).
inline void check_mask_storage(const causal_mask&) {}
template <class M, class S>
void check_mask_storage(const ignore_keys_mask<M, S>& m) {
  check_has_storage("argus::mask(ignore_keys)", m.keys.view.data(), m.keys.view.size());
}
template <class M, class S>
void check_mask_storage(const ignore_mask<M, S>& m) {
  check_has_storage("argus::mask(ignore_where)", m.pairs.view.data(), m.pairs.view.size());
}
template <class T, class S>
void check_mask_storage(const additive_mask<T, S>& m) {
  check_has_storage("argus::mask(add_to_scores)", m.values.view.data(), m.values.view.size());
}
}  // namespace detail

/// Mask M fits scores of (batch, seq_q, seq_kv): every relation mask() checks.
template <class M, std::size_t Batch, std::size_t SeqQ, std::size_t SeqKV>
concept mask_fits_scores = Mask<M> &&
    padding_batch_equals_batch<detail::mask_extents<M>::padding_batch, Batch> &&
    padding_length_equals_seq_kv<detail::mask_extents<M>::padding_keys, SeqKV> &&
    mask_rows_equal_seq_q<detail::mask_extents<M>::rows, SeqQ> &&
    mask_cols_equal_seq_kv<detail::mask_extents<M>::cols, SeqKV>;

/// Applies mask m to scores s (batch, head, seq_q, seq_kv). Masks compose:
/// mask(mask(s, causal), ignore_keys(padding)) ignores what either ignores.
template <Operand E, Mask M>
  requires axes_are_batch_head_seq_seq<shape_of<E>> &&
           padding_batch_equals_batch<detail::mask_extents<M>::padding_batch, axis_t<shape_of<E>, 0>::static_extent> &&
           padding_length_equals_seq_kv<detail::mask_extents<M>::padding_keys, axis_t<shape_of<E>, 3>::static_extent> &&
           mask_rows_equal_seq_q<detail::mask_extents<M>::rows, axis_t<shape_of<E>, 2>::static_extent> &&
           mask_cols_equal_seq_kv<detail::mask_extents<M>::cols, axis_t<shape_of<E>, 3>::static_extent> &&
           (std::is_void_v<typename detail::mask_value_type<M>::type> ||
            value_types_agree<typename detail::mask_value_type<M>::type, value_type_of<E>>)
constexpr masked_node<expression_t<E>, M> mask(E&& s, const M& m) {
  masked_node<expression_t<E>, M> node{as_expression(std::forward<E>(s)), m};
  const auto sh = node.scores.shape();
  detail::check_mask_extents(m, sh.extent(0), sh.extent(2), sh.extent(3));
  return node;
}

/// Applies several masks in order: mask(s, m1, m2) == mask(mask(s, m1), m2).
template <Operand E, Mask M1, Mask M2, Mask... Ms>
constexpr auto mask(E&& s, const M1& m1, const M2& m2, const Ms&... ms)
    -> decltype(mask(mask(std::forward<E>(s), m1), m2, ms...)) {
  return mask(mask(std::forward<E>(s), m1), m2, ms...);
}

}  // namespace argus
