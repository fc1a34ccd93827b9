// argus/expr/mask.hpp -- expression layer: masks applied to scores before the softmax.
//
// One polarity for every boolean mask, stated in the names: a true (non-zero) entry means
// "ignore this key" (PyTorch's key_padding_mask and boolean attn_mask convention).
//   causal                        query i may attend key j iff j <= i (top-left aligned)
//   causal_lower_right(sq, skv)   ... iff j <= i + skv - sq (bottom-right aligned)
//   causal_from(k)                ... iff j <= i + k
//   sliding_window(w)             ... iff i - w < j <= i (the last w keys; m.windowed(w) for
//                                 any causal mask m)
//   ignore_keys(padding)          padding (batch, seq_kv): padding[b][j] != 0 ignores key j
//                                 for batch item b
//   ignore_where(m)               m (seq_q, seq_kv): m[i][j] != 0 ignores key j for query i
//   add_to_scores(a)              a (seq_q, seq_kv) of the value type, added to the scaled
//                                 logits (-infinity ignores the key)
// A query whose keys are all ignored attends nothing: its output row is zero, never NaN.
//
// Each of these is a mask kind: a class that says, in one place, what it does to a pair
// (query i, key j) of head h of batch item b, which every evaluator reads (the concept Mask
// below lists what a kind provides). A kind of one's own (a document mask, ALiBi's per-head
// bias) is such a class too: argus::evaluate, explain, the modules' forward and
// evaluate_reference take it as they take these. The fused loop nest and the training
// kernels compute the four kinds above (eval/fused_attention.hpp, fused_mask); a chain with
// another kind evaluates its attention core unfused (docs/how-to/masks.md, "A mask kind of
// your own").
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

namespace argus {

/// What a mask kind does to a pair: ignores it (M::ignores(b, h, i, j) says whether; a
/// boolean mask), or adds M::added(b, h, i, j), of type T, to its scaled logit (-infinity
/// ignores it; an additive mask).
struct ignores_pairs {};
template <class T>
struct adds_to_pairs {
  using value_type = T;
};
/// The static extents a mask kind's operands fix, checked against the scores' when mask() is
/// called (a kind's `static constexpr mask_constraints constraints`; none by default): a
/// padding mask fixes (batch, seq_kv) as padding_batch and padding_keys, a pair mask
/// (seq_q, seq_kv) as rows and cols. dyn: not fixed.
struct mask_constraints {
  std::size_t padding_batch = dyn, padding_keys = dyn, rows = dyn, cols = dyn;
};

/// Query i may attend key j iff j <= i + offset. argus::causal (offset 0) aligns the diagonal
/// top-left, as torch.triu(ones(seq_q, seq_kv), diagonal=1) masks; causal_lower_right(seq_q,
/// seq_kv) aligns it bottom-right (offset seq_kv - seq_q), as PyTorch's causal_lower_right and
/// FlashAttention's causal do; causal_from(k) puts the first query at position k. With a
/// window w (sliding_window(w), m.windowed(w)), query i attends only the last w of those keys:
/// i + offset - w < j <= i + offset. A query with i + offset < 0, or a window of 0, attends no
/// key: its output row is zero.
struct causal_mask {
  using mask_effect = ignores_pairs;
  /// The window of a mask without one: every key up to the diagonal.
  static constexpr std::size_t every_key = std::numeric_limits<std::size_t>::max();
  std::ptrdiff_t offset = 0;
  /// The (seq_q, seq_kv) of the scores causal_lower_right was made for, checked against them
  /// when the mask is applied (shape_error); dyn: not given.
  std::size_t seq_q = dyn, seq_kv = dyn;
  /// At most this many keys per query, the last it may attend (a sliding window).
  std::size_t window = every_key;

  /// Query i attends the keys [0, reach(i)): i + 1 + offset of them, 0 where that is negative.
  constexpr std::size_t reach(std::size_t i) const noexcept {
    if (offset >= 0) return i + 1 + static_cast<std::size_t>(offset);
    const auto back = static_cast<std::size_t>(-(offset + 1));  // no overflow at the minimum
    return i > back ? i - back : 0;
  }
  /// The first key query i attends: reach(i) - window, or 0.
  constexpr std::size_t first(std::size_t i) const noexcept {
    const std::size_t end = reach(i);
    return end > window ? end - window : 0;
  }
  /// Whether query i ignores key j.
  constexpr bool ignores(std::size_t i, std::size_t j) const noexcept {
    return j >= reach(i) || j < first(i);
  }
  /// The same for any batch item and head (the mask-kind form).
  constexpr bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const noexcept {
    return ignores(i, j);
  }
  /// The mask that ignores the same pairs of seq_q queries and seq_kv keys with its offset
  /// within [-seq_q, seq_kv] and its window at most seq_q + seq_kv + 1 (the kernels compare
  /// query positions in the value type): an offset past seq_kv shrinks the window by as much.
  constexpr causal_mask fitted(std::size_t sq, std::size_t skv) const noexcept {
    causal_mask m = *this;
    const auto q = static_cast<std::ptrdiff_t>(sq), kv = static_cast<std::ptrdiff_t>(skv);
    if (m.offset > kv) {  // every query reaches past the last key: only the window limits
      const auto excess = static_cast<std::size_t>(m.offset - kv);
      if (m.window != every_key) m.window = m.window > excess ? m.window - excess : 0;
      m.offset = kv;
    }
    if (m.offset < -q) m.offset = -q;  // no query reaches a key
    if (m.window != every_key && m.window > sq + skv + 1) m.window = every_key;
    return m;
  }
  /// This mask with a sliding window of w keys: query i attends key j iff
  /// i + offset - w < j <= i + offset (FlashAttention's window_size = (w - 1, 0), the
  /// sliding_window of Mistral's attention).
  constexpr causal_mask windowed(std::size_t w) const noexcept {
    causal_mask m = *this;
    m.window = w;
    return m;
  }
  /// As explain() names it: causal, causal (offset 3), causal (offset -2, window 4).
  std::string name() const {
    std::string extra;
    if (offset != 0) extra = "offset " + std::to_string(offset);
    if (window != every_key)
      extra += (extra.empty() ? "window " : ", window ") + std::to_string(window);
    return extra.empty() ? "causal" : "causal (" + extra + ")";
  }
  /// The lengths causal_lower_right was made for agree with the scores' (shape_error).
  void check_extents(std::size_t, std::size_t, std::size_t q, std::size_t kv) const {
    if (seq_q != dyn)
      detail::check_extents_agree("argus::mask(causal_lower_right)", "the mask's seq_q", seq_q,
                                  "seq_q", q);
    if (seq_kv != dyn)
      detail::check_extents_agree("argus::mask(causal_lower_right)", "the mask's seq_kv", seq_kv,
                                  "seq_kv", kv);
  }
};
inline constexpr causal_mask causal{};
/// The causal mask aligned bottom-right for scores of seq_q queries and seq_kv keys: query i
/// may attend key j iff j <= i + seq_kv - seq_q, so the last query attends every key (seq_q
/// new queries after seq_kv - seq_q cached keys). mask() checks seq_q and seq_kv against the
/// scores' extents (shape_error).
constexpr causal_mask causal_lower_right(std::size_t seq_q, std::size_t seq_kv) noexcept {
  return {static_cast<std::ptrdiff_t>(seq_kv) - static_cast<std::ptrdiff_t>(seq_q), seq_q, seq_kv};
}
/// The causal mask whose first query sits at position k: query i may attend key j iff
/// j <= i + k (k may be negative: queries before position 0 attend nothing).
constexpr causal_mask causal_from(std::ptrdiff_t k) noexcept { return {k}; }
/// The causal mask with a sliding window of w keys: query i attends keys i - w + 1 ... i, the
/// last w up to itself (causal.windowed(w); a window of 0 attends nothing).
constexpr causal_mask sliding_window(std::size_t w) noexcept { return causal.windowed(w); }

/// Per batch item, the keys to ignore: (batch, seq_kv), non-zero = ignored.
template <class M, Shape S>
struct ignore_keys_mask {
  using mask_effect = ignores_pairs;
  static constexpr mask_constraints constraints{.padding_batch = static_extent_v<S, 0>,
                                                .padding_keys = static_extent_v<S, 1>};
  leaf<const M, S> keys;

  bool ignores(std::size_t b, std::size_t, std::size_t, std::size_t j) const {
    return keys.view(b, j) != 0;
  }
  static std::string name() { return "ignore_keys"; }
  void check_extents(std::size_t b, std::size_t, std::size_t, std::size_t kv) const {
    const auto s = keys.shape();
    detail::check_extents_agree("argus::mask(ignore_keys)", "the batch of the padding mask",
                                s.extent(0), "the batch of the scores", b);
    detail::check_extents_agree("argus::mask(ignore_keys)", "the length of the padding mask",
                                s.extent(1), "seq_kv", kv);
  }
  auto operands() const { return std::tuple(keys.view); }
  void check_storage() const { detail::check_leaf_storage("argus::mask(ignore_keys)", keys); }
};

namespace detail {
template <class Pairs>
void check_pair_mask_extents(const char* op, const Pairs& p, std::size_t q, std::size_t kv) {
  const auto s = p.shape();
  detail::check_extents_agree(op, "the mask's row count", s.extent(0), "seq_q", q);
  detail::check_extents_agree(op, "the mask's column count", s.extent(1), "seq_kv", kv);
}
}  // namespace detail

/// Per (query, key) pair, whether to ignore it: (seq_q, seq_kv), non-zero = ignored.
template <class M, Shape S>
struct ignore_mask {
  using mask_effect = ignores_pairs;
  static constexpr mask_constraints constraints{.rows = static_extent_v<S, 0>,
                                                .cols = static_extent_v<S, 1>};
  leaf<const M, S> pairs;

  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return pairs.view(i, j) != 0;
  }
  static std::string name() { return "ignore_where"; }
  void check_extents(std::size_t, std::size_t, std::size_t q, std::size_t kv) const {
    detail::check_pair_mask_extents("argus::mask(ignore_where)", pairs, q, kv);
  }
  auto operands() const { return std::tuple(pairs.view); }
  void check_storage() const { detail::check_leaf_storage("argus::mask(ignore_where)", pairs); }
};
/// Added to the scaled logits: (seq_q, seq_kv); -infinity ignores the key.
template <class T, Shape S>
struct additive_mask {
  using mask_effect = adds_to_pairs<T>;
  static constexpr mask_constraints constraints{.rows = static_extent_v<S, 0>,
                                                .cols = static_extent_v<S, 1>};
  leaf<const T, S> values;

  T added(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return values.view(i, j);
  }
  static std::string name() { return "add_to_scores"; }
  void check_extents(std::size_t, std::size_t, std::size_t q, std::size_t kv) const {
    detail::check_pair_mask_extents("argus::mask(add_to_scores)", values, q, kv);
  }
  auto operands() const { return std::tuple(values.view); }
  void check_storage() const { detail::check_leaf_storage("argus::mask(add_to_scores)", values); }
};

/// Element types a boolean mask may have.
template <class M>
concept mask_element_is_bool_or_uint8 = std::is_same_v<M, bool> || std::is_same_v<M, std::uint8_t>;

/// Reports (static_assert) the first rule mask operand P breaks; true when it breaks none.
namespace detail {
template <bool Report, class P, bool PerKey, bool Boolean>
constexpr bool mask_operand_accepted() {
  if constexpr (!operands_accepted<Report, P>()) {
    return false;
  } else if constexpr (PerKey && !axes_are_batch_seq<shape_of<P>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_seq<shape_of<P>>,
                    "axes_are_batch_seq: argus::ignore_keys(padding) takes padding of axes (batch, "
                    "seq_kv)");
    return false;
  } else if constexpr (!PerKey && !axes_are_seq_seq<shape_of<P>>) {
    if constexpr (Report)
      static_assert(axes_are_seq_seq<shape_of<P>>,
                    "axes_are_seq_seq: argus::ignore_where(m) and argus::add_to_scores(a) take a "
                    "mask of axes (seq_q, seq_kv)");
    return false;
  } else if constexpr (Boolean && !mask_element_is_bool_or_uint8<value_type_of<P>>) {
    if constexpr (Report)
      static_assert(mask_element_is_bool_or_uint8<value_type_of<P>>,
                    "mask_element_is_bool_or_uint8: a boolean mask holds bool or std::uint8_t "
                    "(non-zero: ignore)");
    return false;
  } else if constexpr (!Boolean && !value_type_is_float_or_double<value_type_of<P>>) {
    if constexpr (Report)
      static_assert(value_type_is_float_or_double<value_type_of<P>>,
                    "value_type_is_float_or_double: argus::add_to_scores(a) adds float or double "
                    "values");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when ignore_keys(p), ignore_where(p), add_to_scores(p) compile (in-process tests).
template <class P>
concept ignore_keys_accepts = detail::mask_operand_accepted<false, P, true, true>();
template <class P>
concept ignore_where_accepts = detail::mask_operand_accepted<false, P, false, true>();
template <class P>
concept add_to_scores_accepts = detail::mask_operand_accepted<false, P, false, false>();

/// Ignores, for batch item b, every key j with padding[b][j] != 0; padding is (batch, seq_kv).
template <class P>
constexpr auto ignore_keys(P&& padding) {
  if constexpr (!detail::mask_operand_accepted<true, P, true, true>())
    return detail::rejected{};
  else
    return ignore_keys_mask<value_type_of<P>, shape_of<P>>{as_expression(std::forward<P>(padding))};
}
/// Ignores key j for query i where m[i][j] != 0; m is (seq_q, seq_kv).
template <class P>
constexpr auto ignore_where(P&& m) {
  if constexpr (!detail::mask_operand_accepted<true, P, false, true>())
    return detail::rejected{};
  else
    return ignore_mask<value_type_of<P>, shape_of<P>>{as_expression(std::forward<P>(m))};
}
/// Adds a[i][j] to the scaled logit of query i and key j (-infinity ignores it); a is
/// (seq_q, seq_kv) of the scores' value type.
template <class P>
constexpr auto add_to_scores(P&& a) {
  if constexpr (!detail::mask_operand_accepted<true, P, false, false>())
    return detail::rejected{};
  else
    return additive_mask<value_type_of<P>, shape_of<P>>{as_expression(std::forward<P>(a))};
}

namespace detail {
template <class E>
inline constexpr bool is_adds_to_pairs = false;
template <class T>
inline constexpr bool is_adds_to_pairs<adds_to_pairs<T>> = true;

/// A kind that ignores pairs: M::mask_effect is ignores_pairs and M::ignores(b, h, i, j).
template <class M>
concept boolean_mask_kind = std::is_same_v<typename M::mask_effect, ignores_pairs> &&
    requires(const M& m, std::size_t n) {
  { m.ignores(n, n, n, n) } -> std::convertible_to<bool>;
};
/// A kind that adds to pairs: M::mask_effect is adds_to_pairs<T> and M::added(b, h, i, j) is T.
template <class M>
concept additive_mask_kind = is_adds_to_pairs<typename M::mask_effect> &&
    requires(const M& m, std::size_t n) {
  { m.added(n, n, n, n) } -> std::same_as<typename M::mask_effect::value_type>;
};
/// What explain() calls the kind.
template <class M>
concept mask_kind_has_a_name = requires(const M& m) {
  { m.name() } -> std::convertible_to<std::string>;
};
/// Whether M is a mask kind (the concept Mask; a function, so that a compiler's report of a
/// type that is none stops here rather than listing each requirement).
template <class M>
constexpr bool is_mask_kind() {
  if constexpr (std::is_class_v<M>) {
    constexpr bool effect = boolean_mask_kind<M> || additive_mask_kind<M>;
    return effect && mask_kind_has_a_name<M>;
  } else {
    return false;
  }
}
/// Whether M says what it does to a pair (M::mask_effect): meant as a mask kind.
template <class M>
concept declares_a_mask_effect = requires {
  typename M::mask_effect;
};
/// A class meant as a mask kind (a mask_effect) is one.
template <class M>
constexpr bool is_mask_kind_if_it_says() {
  if constexpr (declares_a_mask_effect<M>)
    return is_mask_kind<M>();
  else
    return true;
}

/// Whether class M has a member named ignores_block, of any kind or signature: a function,
/// overloaded or a template, or not a function at all. Naming it in a class derived from M and
/// from one more class with such a member is ambiguous exactly when M has one (a final M is
/// asked for one plain member function).
struct names_ignores_block_probe {
  void ignores_block();
};
template <class M>
struct names_ignores_block_mix : M, names_ignores_block_probe {};
template <class M>
constexpr bool names_ignores_block() {
  if constexpr (!std::is_class_v<M>)
    return false;
  else if constexpr (std::is_final_v<M>)
    return requires { &M::ignores_block; };
  else
    return !requires { &names_ignores_block_mix<M>::ignores_block; };
}
/// Whether M says of blocks of pairs that it ignores them whole: bool ignores_block(b, h,
/// i_begin, i_end, j_begin, j_end) const on a kind that ignores pairs (the fused loop nest
/// then skips them).
template <class M>
concept ignores_blocks = boolean_mask_kind<M> && requires(const M& m, std::size_t n) {
  { m.ignores_block(n, n, n, n, n, n) } -> std::convertible_to<bool>;
};
/// M's ignores_block, where it has one, is the one ignores_blocks asks for.
template <class M>
constexpr bool ignores_block_as_documented() {
  return !names_ignores_block<M>() || ignores_blocks<M>;
}
}  // namespace detail

/// A mask kind: causal, ignore_keys(...), ignore_where(...), add_to_scores(...), or a class of
/// one's own that provides, as they do,
///   using mask_effect = ignores_pairs;   and  bool ignores(b, h, i, j) const, or
///   using mask_effect = adds_to_pairs<T>; and  T added(b, h, i, j) const
///     (b batch item, h head, i query, j key; -infinity ignores the pair);
///   std::string name() const             what explain() calls it;
/// and where it reads tensors (each optional, none by default):
///   static constexpr mask_constraints constraints   static extents mask() checks;
///   void check_extents(batch, heads, seq_q, seq_kv) const
///                                         the scores' run-time extents, when mask() is called
///                                         (throw argus::shape_error);
///   auto operands() const                 a std::tuple of the views it reads (the evaluators
///                                         keep their output from overwriting them);
///   void check_storage() const            its tensors are still there, when evaluated;
/// and, for a kind that ignores pairs, optionally
///   bool ignores_block(b, h, i_begin, i_end, j_begin, j_end) const
///                                         true only where it ignores every pair of queries
///                                         [i_begin, i_end) and keys [j_begin, j_end) (false
///                                         is always correct): the fused loop nest then skips
///                                         the tile (a block mask, as FlexAttention's); any
///                                         other member of that name does not compile
///                                         (ignores_block_takes_b_h_and_two_ranges).
/// A mask is copied into the expression: it holds views, not tensors. The evaluators call
/// ignores, added and ignores_block from several threads at once, on a const mask.
template <class M>
concept Mask = detail::is_mask_kind<M>();

namespace detail {
/// The value type an additive kind adds, void for a boolean kind.
template <class M>
struct mask_value_type {
  using type = void;
};
template <class M>
  requires additive_mask_kind<M>
struct mask_value_type<M> {
  using type = typename M::mask_effect::value_type;
};
/// A kind's constraints, or none.
template <class M>
constexpr mask_constraints constraints_of() {
  if constexpr (requires { M::constraints; })
    return M::constraints;
  else
    return {};
}
/// What M ignores or adds at (b, h, i, j): for a boolean kind whether it ignores the pair, for
/// an additive one whether it adds -infinity.
template <Mask M>
bool mask_ignores(const M& m, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
  if constexpr (boolean_mask_kind<M>) {
    return m.ignores(b, h, i, j);
  } else {
    using T = typename M::mask_effect::value_type;
    return m.added(b, h, i, j) == -std::numeric_limits<T>::infinity();
  }
}
}  // namespace detail

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
/// The run-time extents of a mask agree with the scores' (batch, heads, seq_q, seq_kv).
template <class M>
void check_mask_extents(const M& m, std::size_t b, std::size_t h, std::size_t q, std::size_t kv) {
  if constexpr (requires { m.check_extents(b, h, q, kv); }) m.check_extents(b, h, q, kv);
}

/// mask(mask(s, m1), m2)... on an expression s whose static relations hold; run-time extents
/// are checked here, before the node is returned.
template <Expression E, class M, class... Ms>
constexpr auto apply_masks(E s, const M& m, const Ms&... ms) {
  masked_node<E, M> node{std::move(s), m};
  const auto sh = node.scores.shape();
  check_mask_extents(m, sh.extent(0), sh.extent(1), sh.extent(2), sh.extent(3));
  if constexpr (sizeof...(Ms) == 0)
    return node;
  else
    return apply_masks(std::move(node), ms...);
}

/// The views of its operands a mask reads (none for causal).
template <class M>
auto mask_operands(const M& m) {
  if constexpr (requires { m.operands(); })
    return m.operands();
  else
    return std::tuple<>{};
}

/// Throws shape_error when a mask reads a moved-from tensor or one whose storage is gone
/// (check_leaf_storage; checked when it is evaluated).
template <class M>
void check_mask_storage(const M& m) {
  if constexpr (requires { m.check_storage(); }) m.check_storage();
}
}  // namespace detail

namespace detail {
/// The static extents kind M fixes (constraints_of), one by one.
template <class M>
inline constexpr std::size_t padding_batch_of = constraints_of<M>().padding_batch;
template <class M>
inline constexpr std::size_t padding_keys_of = constraints_of<M>().padding_keys;
template <class M>
inline constexpr std::size_t mask_rows_of = constraints_of<M>().rows;
template <class M>
inline constexpr std::size_t mask_cols_of = constraints_of<M>().cols;
}  // namespace detail

/// Mask M fits scores of (batch, seq_q, seq_kv): every relation mask() checks (in-process form).
template <class M, std::size_t Batch, std::size_t SeqQ, std::size_t SeqKV>
concept mask_fits_scores =
    Mask<M> && padding_batch_equals_batch<detail::padding_batch_of<M>, Batch> &&
    padding_length_equals_seq_kv<detail::padding_keys_of<M>, SeqKV> &&
    mask_rows_equal_seq_q<detail::mask_rows_of<M>, SeqQ> &&
    mask_cols_equal_seq_kv<detail::mask_cols_of<M>, SeqKV>;

/// A mask argument is one of causal (or causal_lower_right(...), causal_from(...),
/// sliding_window(...)), ignore_keys(...), ignore_where(...), add_to_scores(...), or a mask
/// kind of one's own (Mask).
template <class M>
concept argument_is_a_mask = Mask<std::remove_cvref_t<M>>;
/// A class that declares a mask_effect is meant as a mask kind: it has the members Mask lists.
template <class M>
concept mask_kind_has_its_members = detail::is_mask_kind_if_it_says<M>();
/// A mask kind's ignores_block, where it has one, is bool ignores_block(b, h, i_begin, i_end,
/// j_begin, j_end) const, and the kind ignores pairs: the fused loop nest would otherwise never
/// call it, and the tiles it names would be computed after all.
template <class M>
concept ignores_block_takes_b_h_and_two_ranges = detail::ignores_block_as_documented<M>();
/// mask(s, masks...) with no mask would be s itself: a mistake, not a no-op.
template <std::size_t Masks>
concept mask_takes_at_least_one_mask = Masks != 0;

namespace detail {
/// Reports (static_assert) the first relation mask M breaks against scores of (Batch, SeqQ,
/// SeqKV) and value type T; true when it breaks none. Used by mask() and by the module's forward.
template <bool Report, class M, std::size_t Batch, std::size_t SeqQ, std::size_t SeqKV, class T>
constexpr bool mask_accepted() {
  constexpr mask_constraints E = constraints_of<std::remove_cvref_t<M>>();
  using V = typename mask_value_type<std::remove_cvref_t<M>>::type;
  if constexpr (any_rejected<M>) {
    return false;  // reported where it was made
  } else if constexpr (!mask_kind_has_its_members<std::remove_cvref_t<M>>) {
    if constexpr (Report)
      static_assert(mask_kind_has_its_members<std::remove_cvref_t<M>>,
                    "mask_kind_has_its_members: a mask kind (a class with a mask_effect) has "
                    "using mask_effect = argus::ignores_pairs; and bool ignores(b, h, i, j) const, "
                    "or using mask_effect = argus::adds_to_pairs<T>; and T added(b, h, i, j) "
                    "const; and std::string name() const (argus::Mask)");
    return false;
  } else if constexpr (!ignores_block_takes_b_h_and_two_ranges<std::remove_cvref_t<M>>) {
    if constexpr (Report)
      static_assert(ignores_block_takes_b_h_and_two_ranges<std::remove_cvref_t<M>>,
                    "ignores_block_takes_b_h_and_two_ranges: a mask kind's ignores_block is "
                    "bool ignores_block(b, h, i_begin, i_end, j_begin, j_end) const, on a kind "
                    "with using mask_effect = argus::ignores_pairs (an additive kind has none: "
                    "it adds -infinity where it ignores a pair)");
    return false;
  } else if constexpr (!argument_is_a_mask<M>) {
    if constexpr (Report)
      static_assert(argument_is_a_mask<M>,
                    "argument_is_a_mask: a mask is causal (or causal_lower_right, causal_from, "
                    "sliding_window), ignore_keys(padding), ignore_where(pairs), "
                    "add_to_scores(values) or a mask kind of one's own (argus::Mask), given "
                    "after the inputs");
    return false;
  } else if constexpr (!padding_batch_equals_batch<E.padding_batch, Batch>) {
    if constexpr (Report)
      static_assert(padding_batch_equals_batch<E.padding_batch, Batch>,
                    "padding_batch_equals_batch: a key padding mask (ignore_keys, or a mask kind's "
                    "constraints.padding_batch) has one row per batch item");
    return false;
  } else if constexpr (!padding_length_equals_seq_kv<E.padding_keys, SeqKV>) {
    if constexpr (Report)
      static_assert(padding_length_equals_seq_kv<E.padding_keys, SeqKV>,
                    "padding_length_equals_seq_kv: a key padding mask (ignore_keys, or a "
                    "mask kind's constraints.padding_keys) has one entry per key");
    return false;
  } else if constexpr (!mask_rows_equal_seq_q<E.rows, SeqQ>) {
    if constexpr (Report)
      static_assert(mask_rows_equal_seq_q<E.rows, SeqQ>,
                    "mask_rows_equal_seq_q: a (seq_q, seq_kv) mask (ignore_where, "
                    "add_to_scores, or a mask kind's constraints.rows) has one row per query");
    return false;
  } else if constexpr (!mask_cols_equal_seq_kv<E.cols, SeqKV>) {
    if constexpr (Report)
      static_assert(mask_cols_equal_seq_kv<E.cols, SeqKV>,
                    "mask_cols_equal_seq_kv: a (seq_q, seq_kv) mask (ignore_where, "
                    "add_to_scores, or a mask kind's constraints.cols) has one column per key");
    return false;
  } else if constexpr (!std::is_void_v<V> && !value_types_agree<V, T>) {
    if constexpr (Report)
      static_assert(std::is_void_v<V> || value_types_agree<V, T>,
                    "value_types_agree: add_to_scores(values) has the value type of the scores");
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// Applies masks ms to scores s (batch, head, seq_q, seq_kv), in order. Masks compose:
/// mask(s, causal, ignore_keys(padding)) == mask(mask(s, causal), ignore_keys(padding))
/// ignores what either ignores.
namespace detail {
/// The rules of mask(s, masks...), in the order they are reported; true when all hold. With Report,
/// the first broken one is a static_assert naming it (the entry point's compile error).
template <bool Report, class E, class... Ms>
constexpr bool mask_accepted() {
  // A chain of rules: several end in `return false` (bugprone-branch-clone), one per rule.
  // NOLINTNEXTLINE(bugprone-branch-clone)
  if constexpr (!operands_accepted<Report, E>()) {
    return false;
  } else if constexpr (!axes_are_batch_head_seq_seq<shape_of<E>>) {
    if constexpr (Report)
      static_assert(axes_are_batch_head_seq_seq<shape_of<E>>,
                    "axes_are_batch_head_seq_seq: argus::mask(s, masks...) masks scores of axes "
                    "(batch, head, seq_q, seq_kv)");
    return false;
  } else if constexpr (!mask_takes_at_least_one_mask<sizeof...(Ms)>) {
    if constexpr (Report)
      static_assert(mask_takes_at_least_one_mask<sizeof...(Ms)>,
                    "mask_takes_at_least_one_mask: argus::mask(s, masks...) takes at least one "
                    "mask (causal, ignore_keys, ignore_where, add_to_scores)");
    return false;
  } else if constexpr (!(mask_accepted<Report, Ms, axis_of<E, 0>::static_extent,
                                       axis_of<E, 2>::static_extent, axis_of<E, 3>::static_extent,
                                       value_type_of<E>>() &&
                         ...)) {
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

/// True when mask(s, masks...) compiles (the same rules, without the report): for in-process tests.
template <class E, class... Ms>
concept mask_accepts = detail::mask_accepted<false, E, Ms...>();

template <class E, class... Ms>
constexpr auto mask(E&& s, const Ms&... ms) {
  if constexpr (!detail::mask_accepted<true, E, Ms...>()) {
    return detail::rejected{};
  } else {
    return detail::apply_masks(as_expression(std::forward<E>(s)), ms...);
  }
}

}  // namespace argus
