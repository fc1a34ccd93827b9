// argus/kernel/flash_attention.hpp -- kernel layer: the fused attention core.
//
// flash_attention(p) computes, for every batch item b, query head h and query row i,
//     O[b][h][i] = softmax_j(scale · Q[b][h][i]·K[b][g][j] + masks) · V[b][g][j],
//     g = h / (heads / kv_heads)   (contiguous groups, as repeat_interleave)
// with the FlashAttention-2 algorithm: queries are cut into tiles, keys stream through in
// tiles, and every query row keeps a running maximum m, a running sum l and an output
// accumulator, rescaled by e^(m_old - m_new) whenever the maximum grows by more than
// rescale_slack (lazily: on most tiles no row's maximum moves that far, and the
// accumulator is not touched; flash_micro_kernels.hpp, softmax_step). Nothing grows with
// seq_q · seq_kv: a thread holds the query tiles of one K/V group, one score tile and (when
// d_v is not a whole number of registers) one padded V tile; flash_micro_kernels.hpp has
// the tile kernels and their register blocking.
//
// Work items. One item is (batch item, K/V head g, run of query tiles) and holds those query
// tiles of every query head of the group, about 128 rows in all (flash_blocking::item_rows):
// each K/V tile is loaded once and reused by all of them (grouped-query attention), and by
// every register block of each query tile, so that the cache lines and pages of K and V
// fetched serve many rows even when K and V are strided views. Consecutive items share g,
// so its K and V stay in L2. A causal mask (key j is allowed for query i iff j <= i +
// causal_offset, 0 top-left aligned, seq_kv − seq_q bottom-right, and, with a window, j > i +
// causal_offset − causal_window) starts the key loop at the first key any row of the item may
// see and ends it after the last, skips the tiles outside each tile's band, starts each set of
// rows at its first row's window where that lies inside a tile (plan_set in run_item) and is
// tested only on the tiles that cross its edges; on those, with four registers of queries
// (AVX-512), each half of a query tile's rows scores and sums only the keys its rows may see
// (halves_of). The boolean masks skip what they ignore whole too: a key tile of padding only
// (ignore_keys), a tile whose every pair a set of rows ignores (ignore_where, a count of its bytes
// first; where it ignores none it is not applied), a tile a kind of one's own says it ignores
// (ignores_block): a skipped tile would have added 0 to each row's sum and accumulator and left its
// maximum. A row whose keys are all masked has m = -inf to the end: its probabilities are exactly
// 0, l stays 0 and its output is 0 (never NaN).
//
// Bad values (docs/reference/semantics.md). A NaN or +inf logit makes its row NaN: the
// exponential passes NaN through, so l and the accumulator become NaN and stay so. A key
// that a mask ignores for a row contributes nothing to it, whatever its V row holds: the
// causal loop bounds skip such keys whole, and on a tile a mask touches, V rows that are
// not finite are zeroed in a copy and added back, one product at a time, to the rows that do
// not ignore them (masked tiles only pay for a finiteness scan of their V tile).
//
// Dropout (p.dropout_rate > 0, training): after a tile's exponentials have been added to
// l, the weights kernel/dropout.hpp drops are zeroed and the kept ones scaled, so the sum
// over V sees them and the normaliser does not, as softmax(S) followed by dropout.
//
// Decode. When seq_q <= 16 and seq_kv is long, an item instead holds the rows of every
// head of a group (so multi-query decode fills the registers) and one CHUNK of the keys;
// items leave (m, l, unnormalised accumulator) per row and a second pass merges the chunks,
// so that even seq_q = 1 with a single head keeps every thread busy.
//
// Head widths: d_k and d_v (>= 1) are run-time values of one loop nest; only the score
// kernels and the few-row value kernel fix d 64 and 128 at compile time, where that measured
// faster (with_fixed_width). Nine copies of the whole loop nest, one per pair of widths, ran
// no faster than that and made the kernels' code 1.16x as large (docs/performance.md, "One
// loop nest for every head width").
#pragma once

#include "argus/kernel/cpu_caches.hpp"
#include "argus/kernel/dropout.hpp"
#include "argus/kernel/entry_points.hpp"
#include "argus/kernel/flash_micro_kernels.hpp"
#include "argus/kernel/parallel.hpp"
#include "argus/kernel/simd.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The problem types are outside the instruction set's namespace: every set's kernels take
// the same ones (kernel/isa.hpp).
namespace argus::kernel {

/// A mask given as code rather than memory: a mask kind of the user's (expr/mask.hpp), which
/// the fused evaluator hands to the kernels as a function and its object. apply(context, b,
/// head, query, rows, j0, n, s, row_stride, key_stride) masks the scaled logits s[r ·
/// row_stride + j · key_stride] of the query query[r] of head head[r] (r < rows) against the
/// key j0 + j (j < n) of batch item b: where `adds`, it adds the kind's value to each; else it
/// sets the pairs the kind ignores to -inf and leaves the rest. The kernels call it from
/// several threads at once, on tiles of pairs (the forward) or rows (the backward).
template <class T>
struct code_mask {
  using apply_function = void(const void* context, std::size_t b, const std::size_t* head,
                              const std::size_t* query, std::size_t rows, std::size_t j0,
                              std::size_t n, T* s, std::size_t row_stride, std::size_t key_stride);
  /// Whether the kind ignores every pair of the rows (as apply's) against keys [j0, j0 + n):
  /// true lets the loop nest skip the tile (false is always correct).
  using skip_function = bool(const void* context, std::size_t b, const std::size_t* head,
                             const std::size_t* query, std::size_t rows, std::size_t j0,
                             std::size_t n);
  const void* context = nullptr;
  apply_function* apply = nullptr;  // null: no such mask
  bool adds = false;
  skip_function* ignores_tile = nullptr;  // null: no tile is skipped
  /// What the kind gives the pair (b, h, i, j): -inf where it ignores it (or adds -inf), else
  /// 0 for a kind that ignores pairs, the value added for one that adds.
  T value(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    T x = 0;
    apply(context, b, &h, &i, 1, j, 1, &x, 1, 1);
    return x;
  }
};

/// One attention call: extents, strided views of Q, K, V and O, the scale and the masks.
/// Element strides; the innermost (feature) stride is always 1, so Q may be a view straight
/// into a projected (batch, seq, heads · d_k) matrix (q_row = heads · d_k, q_head = d_k):
/// split-heads and merge-heads are never copies.
template <class T>
struct attention_problem {
  std::size_t batch, heads, kv_heads, seq_q, seq_kv, d_k, d_v;  // heads % kv_heads == 0
  const T* q;
  std::size_t q_batch, q_head, q_row;  // Q[b][h][i][0..d_k)
  const T* k;
  std::size_t k_batch, k_head, k_row;  // K[b][g][j][0..d_k), g = kv head
  const T* v;
  std::size_t v_batch, v_head, v_row;  // V[b][g][j][0..d_v)
  T* o;
  std::size_t o_batch, o_head, o_row;  // O[b][h][i][0..d_v)
  T scale;                             // logit = scale · q·k
  /// Key j allowed for query i iff j <= i + causal_offset: 0 aligns the diagonal top-left
  /// (torch triu(diagonal=1)), seq_kv − seq_q bottom-right (queries that follow cached keys).
  /// A query with i + causal_offset < 0 sees no key (its output row is 0). Query positions
  /// i + causal_offset are compared as T: keep the offset within [-seq_q, seq_kv] (where it
  /// already hides every key or shows them all), as the fused evaluator does.
  bool causal = false;
  std::ptrdiff_t causal_offset = 0;
  /// Under causal, query i sees only the last causal_window of those keys: i + causal_offset
  /// − causal_window < j (a sliding window; the maximum: no limit). Compared as T too: keep it
  /// at most seq_q + seq_kv + 1 (where it already limits nothing).
  std::size_t causal_window = std::numeric_limits<std::size_t>::max();
  /// [b][j] != 0: key j ignored by every query of batch item b.
  const std::uint8_t* key_ignore = nullptr;
  std::size_t key_ignore_batch = 0;
  /// [b][h][i][j] != 0: (i, j) ignored; strides may be 0 to broadcast; unit stride along j.
  const std::uint8_t* ignore = nullptr;
  std::size_t ignore_batch = 0, ignore_head = 0, ignore_row = 0;
  /// [b][h][i][j] added to the scaled logit (-inf ignores the key, NaN or +inf makes the row
  /// NaN); unit stride along j.
  const T* additive = nullptr;
  std::size_t add_batch = 0, add_head = 0, add_row = 0;
  /// A mask kind given as code (code_mask): applied after `additive` where it adds, after
  /// every other mask where it ignores pairs (a mask that ignores a pair wins over any value
  /// added to it, in any order: docs/reference/semantics.md).
  code_mask<T> code{};
  /// Optional output, for the backward pass: lse[b][h][i] = log Σ_j e^(logit_ij), the
  /// per-row log-sum-exp of the masked logits (-inf for a row whose keys are all masked, NaN
  /// for a row that rule 3 of docs/reference/semantics.md makes NaN);
  /// unit stride along i. Null: not written.
  T* lse = nullptr;
  std::size_t lse_batch = 0, lse_head = 0;
  /// Dropout on the attention weights (training), as kernel/dropout.hpp defines it: each
  /// weight is dropped with probability dropout_rate, chosen by (dropout_seed, b, h, i, j),
  /// and the kept ones are scaled by 1 / (1 − dropout_rate). 0 <= dropout_rate <= 1; 0: none.
  T dropout_rate = 0;
  std::uint64_t dropout_seed = 0;

  /// Whether a mask read from memory or given as code applies (padding, pairs, additive,
  /// code): the tiles under one are masked pair by pair (the causal mask is arithmetic:
  /// `causal`). A new mask of memory joins here, and the loops that test it follow.
  bool element_masks() const noexcept { return key_ignore != nullptr || pair_masks(); }
  /// Whether a mask that may treat each pair differently applies (pairs, additive, code):
  /// any key of a tile may then be ignored for some row.
  bool pair_masks() const noexcept {
    return ignore != nullptr || additive != nullptr || code.apply != nullptr;
  }
};

/// The tiles flash_attention uses for a problem: query rows per tile, keys per tile.
struct flash_tiles {
  std::size_t q_tile, k_tile;
};

}  // namespace argus::kernel

namespace argus::kernel {
inline namespace ARGUS_KERNEL_ISA_NAMESPACE {

namespace detail {

/// |x| as a std::size_t, exact at the minimum of std::ptrdiff_t too.
constexpr std::size_t magnitude(std::ptrdiff_t x) noexcept {
  return x >= 0 ? static_cast<std::size_t>(x) : static_cast<std::size_t>(-(x + 1)) + 1;
}

/// Under p's causal mask, the keys [0, end) that the queries before query_end see: query i
/// sees keys j <= i + causal_offset, so end = query_end + causal_offset, and 0 where that is
/// negative. Meaningful only where p.causal.
template <class T>
std::size_t causal_key_end(const attention_problem<T>& p, std::size_t query_end) noexcept {
  const std::size_t shift = magnitude(p.causal_offset);
  if (p.causal_offset >= 0) return query_end + shift;
  return query_end > shift ? query_end - shift : 0;
}

/// The first query that sees key j under p's causal mask: j − causal_offset, or 0.
template <class T>
std::size_t causal_first_query(const attention_problem<T>& p, std::size_t j) noexcept {
  const std::size_t shift = magnitude(p.causal_offset);
  if (p.causal_offset <= 0) return j + shift;
  return j > shift ? j - shift : 0;
}

/// Under p's causal mask, the first key query `query` sees: its end less causal_window, or 0.
template <class T>
std::size_t causal_key_begin(const attention_problem<T>& p, std::size_t query) noexcept {
  const std::size_t end = causal_key_end(p, query + 1);
  return end > p.causal_window ? end - p.causal_window : 0;
}

/// Under p's causal mask, one past the last query whose window still holds key j: queries
/// i < j + causal_window − causal_offset (saturating; the maximum where no window limits).
template <class T>
std::size_t causal_query_end(const attention_problem<T>& p, std::size_t j) noexcept {
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
  if (p.causal_window >= most - j) return most;
  const std::size_t x = j + p.causal_window, shift = magnitude(p.causal_offset);
  if (p.causal_offset >= 0) return x > shift ? x - shift : 0;
  return shift >= most - x ? most : x + shift;
}

/// How many of the keys [j0, j0 + nk) the queries before `query_end` can see: all of them
/// without a causal mask, else those before causal_key_end(p, query_end).
template <class T>
std::size_t visible_keys(const attention_problem<T>& p, std::size_t query_end, std::size_t j0,
                         std::size_t nk) noexcept {
  if (!p.causal) return nk;
  const std::size_t end = causal_key_end(p, query_end);
  return end > j0 ? std::min(nk, end - j0) : 0;
}

/// Keys that any query can see: all of them, or under a causal mask those before
/// causal_key_end(p, seq_q).
template <class T>
std::size_t visible_keys(const attention_problem<T>& p) noexcept {
  return visible_keys(p, p.seq_q, 0, p.seq_kv);
}

/// The first key some query sees: 0, or under a causal mask with a window the first key of
/// query 0's window; at most visible_keys(p), so that [first, visible_keys(p)) are the keys
/// some query sees.
template <class T>
std::size_t first_visible_key(const attention_problem<T>& p) noexcept {
  return p.causal ? std::min(causal_key_begin(p, 0), visible_keys(p)) : 0;
}

/// Few queries against many keys: such calls split the keys over threads
/// (flash_attention_chunks_of_keys), and each work item holds every row of a K/V head's group
/// in one set, which then shares each K and V tile. No least number of keys: the bound of 256
/// the first kernels had cost grouped heads the most where contexts are short. Zen 5, AVX-512,
/// 16-255 keys, each shape in its own process, against tile by tile: one query of 32 heads over
/// 8 K/V heads 1.49-1.53x faster on 1 thread, 1.31-1.51x on 2; 8 over 1 1.8-2.1x, 1.4-3.1x;
/// 16 queries of 32 over 8 2.0-2.1x; 8 over 8 (nothing to share) 0.97-1.17x, but 0.87 and 0.95
/// for 16 keys on 2 threads (3 µs calls; docs/performance.md, "Decoding over short contexts").
template <class T>
bool decode_shaped(const attention_problem<T>& p) noexcept {
  const std::size_t keys = visible_keys(p) - first_visible_key(p);
  return p.seq_q <= 16 && keys >= 8 * p.seq_q;
}

/// The per-thread scratch of flash_attention, reused by every later call on that thread
/// (aligned; grows, never shrinks).
class flash_scratch {
 public:
  flash_scratch() = default;
  flash_scratch(const flash_scratch&) = delete;
  flash_scratch& operator=(const flash_scratch&) = delete;
  ~flash_scratch() { release(); }

  void* get(std::size_t bytes) {
    if (bytes > size_) {
      release();
      data_ = ::operator new (bytes, std::align_val_t{buffer_alignment});
      size_ = bytes;
    }
    return data_;
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{buffer_alignment});
    data_ = nullptr;
    size_ = 0;
  }
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

inline flash_scratch& thread_flash_scratch() {
  thread_local flash_scratch scratch;
  return scratch;
}

/// The rows of one tile: up to Q_TILE (head, query) pairs of one batch item and K/V head,
/// with their softmax state. Lanes past `rows` are padding.
template <class T>
struct row_set {
  std::size_t rows;
  std::size_t min_query, max_query;  // over the rows in use
  std::size_t* head;                 // [Q_TILE] query head of each row
  std::size_t* query;                // [Q_TILE] query position of each row
  const T** q;                       // [Q_TILE] the row in Q
  T* qt;                             // (D_K, Q_TILE) scale · Q, transposed
  T* acc;        // unnormalised output: (D_V, Q_TILE) if on_lanes(), else (Q_TILE, DVP)
  T* m;          // [Q_TILE] running maximum
  T* l;          // [Q_TILE] running sum
  T* alpha;      // [Q_TILE] rescale factor of the current key tile
  T* query_pos;  // [Q_TILE] query position + causal_offset as T, for the causal test

  /// Lanes that hold rows: `rows` rounded up to whole registers.
  std::size_t lanes() const noexcept { return flash_blocking<T>::padded(rows); }
  /// Queries on lanes (score_tile, lane_value_tile, acc (D_V, Q_TILE)), or, for few rows,
  /// dot products and d_v on lanes (score_dots, value_tile, acc (Q_TILE, DVP)).
  bool on_lanes() const noexcept { return rows > flash_blocking<T>::dot_rows; }
  /// Element (r, c) of the unnormalised output.
  T& out(std::size_t r, std::size_t c, std::size_t dvp) const noexcept {
    return on_lanes() ? acc[c * flash_blocking<T>::q_tile + r] : acc[r * dvp + c];
  }
};

/// Whether p's key tiles take flash_blocking::min_keys keys at least: where its row sets can
/// hold more than dot_rows query rows (those attending to one K/V head: every head of its
/// group, every query), and where it is decode-shaped (flash_blocking::min_keys says why).
template <class T>
bool takes_key_floor(const attention_problem<T>& p) noexcept {
  const std::size_t group = p.kv_heads == 0 ? 1 : p.heads / p.kv_heads;
  return group * p.seq_q > flash_blocking<T>::dot_rows || decode_shaped(p);
}

/// One thread's scratch for items of `sets` row sets: the sets, then the tiles they share.
template <class T>
struct flash_layout {
  static constexpr std::size_t tile = flash_blocking<T>::q_tile;
  std::size_t d_k, dvp, k_tile, sets;
  bool pack_v;  // d_v is not a whole number of registers: V tiles are copied and padded

  flash_layout(const attention_problem<T>& p, std::size_t sets_per_item)
      : d_k(p.d_k),
        dvp(flash_blocking<T>::padded(p.d_v)),
        k_tile(flash_blocking<T>::k_tile(p.d_k, p.d_v, takes_key_floor(p))),
        sets(sets_per_item),
        pack_v(p.d_v % flash_blocking<T>::width != 0) {}

  /// Per set: Qt (D_K, Q_TILE), acc (Q_TILE, DVP) or (D_V, Q_TILE), m, l, alpha and query
  /// positions.
  std::size_t set_elements() const noexcept { return d_k * tile + tile * dvp + 4 * tile; }
  /// Shared: the score tile (K_TILE, Q_TILE), its column maxima, the padded V tile (K_TILE, DVP).
  std::size_t shared_elements() const noexcept {
    return (k_tile + 1) * tile + (pack_v ? k_tile * dvp : 0);
  }
  /// Per set: head, query and row pointer of each row.
  std::size_t index_bytes() const noexcept {
    return sets * tile * (2 * sizeof(std::size_t) + sizeof(T*));
  }
  std::size_t bytes() const noexcept {
    return (sets * set_elements() + shared_elements()) * sizeof(T) + index_bytes();
  }
};

class pair_mask_summary;

/// One work item: row sets of one batch item and K/V head, and the tiles they share.
template <class T>
struct flash_item {
  const attention_problem<T>* p;
  std::size_t b, g;
  row_set<T>* sets;
  std::size_t set_count;
  T* scores;  // (K_TILE, Q_TILE)
  T* top;     // [Q_TILE] column maxima of the score tile
  T* v_pack;  // (K_TILE, DVP), or null
  std::size_t dvp, k_tile;
  const pair_mask_summary* pair_summary = nullptr;  // the call's, or null
  /// Whether the item reads each tile of K and V once, as a decode item does, and so fetches
  /// them ahead as it scores (key_stream): in a model they come from memory.
  bool streams_keys = false;
  /// Where such an item fetches them: into L1, or into L2 only (key_stream::into_l1: the core's
  /// argus::detail::roomy_l1d(), read once a call).
  bool fetches_into_l1 = false;
};

/// Points the row sets and shared tiles of `it` into this thread's scratch.
template <class T>
void carve(const flash_layout<T>& layout, flash_item<T>& it) {
  constexpr std::size_t tile = flash_layout<T>::tile;
  thread_local std::vector<row_set<T>> sets;
  sets.resize(layout.sets);
  T* e = static_cast<T*>(thread_flash_scratch().get(layout.bytes()));
  it.scores = e, e += layout.k_tile * tile;
  it.top = e, e += tile;
  it.v_pack = layout.pack_v ? e : nullptr;
  if (layout.pack_v) e += layout.k_tile * layout.dvp;
  for (row_set<T>& s : sets) {
    s.qt = e, e += layout.d_k * tile;
    s.acc = e, e += tile * layout.dvp;
    s.m = e, e += tile;
    s.l = e, e += tile;
    s.alpha = e, e += tile;
    s.query_pos = e, e += tile;
  }
  auto* index = reinterpret_cast<std::size_t*>(e);
  for (row_set<T>& s : sets) s.head = index, index += tile;
  for (row_set<T>& s : sets) s.query = index, index += tile;
  auto* pointers = reinterpret_cast<const T**>(index);
  for (row_set<T>& s : sets) s.q = pointers, pointers += tile;
  it.sets = sets.data();
  it.dvp = layout.dvp;
  it.k_tile = layout.k_tile;
}

/// Starts the softmax state of a set (whose head and query are filled in) and, unless it
/// takes the dot-product path, packs its queries, scaled and transposed (padding lanes 0).
template <class T>
void start_set(const attention_problem<T>& p, std::size_t b, row_set<T>& s, std::size_t dvp) {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  // In locals: updated through s, every row's store to s.q[r] (which may alias s) made GCC
  // store both and reload them, a store-forwarding stall per row.
  const T* const q_batch = p.q + b * p.q_batch;
  std::size_t lowest = s.query[0], highest = s.query[0];
  for (std::size_t r = 0; r < s.rows; ++r) {
    const std::size_t query = s.query[r];
    s.q[r] = q_batch + s.head[r] * p.q_head + query * p.q_row;
    lowest = std::min(lowest, query);
    highest = std::max(highest, query);
  }
  s.min_query = lowest, s.max_query = highest;
  if (s.on_lanes()) {
    using V = simd<T>;
    constexpr std::size_t w = V::width;
    const V scale = V::broadcast(p.scale);
    std::size_t r0 = 0;
    for (; r0 + w <= s.rows; r0 += w) {  // whole width × width blocks: register transposes
      std::size_t c0 = 0;
      for (; c0 + w <= p.d_k; c0 += w) {
        // Unrolled, so that the block stays in registers (rolled, GCC kept it on the stack).
        V block[w];
#pragma GCC unroll 16
        for (std::size_t u = 0; u < w; ++u) block[u] = V::load(s.q[r0 + u] + c0) * scale;
        transpose(block);
#pragma GCC unroll 16
        for (std::size_t u = 0; u < w; ++u) block[u].store(s.qt + (c0 + u) * tile + r0);
      }
      for (std::size_t r = r0; r < r0 + w; ++r)
        for (std::size_t c = c0; c < p.d_k; ++c) s.qt[c * tile + r] = p.scale * s.q[r][c];
    }
    for (std::size_t r = r0; r < s.rows; ++r)
      for (std::size_t c = 0; c < p.d_k; ++c) s.qt[c * tile + r] = p.scale * s.q[r][c];
    for (std::size_t c = 0; c < p.d_k; ++c)
      std::fill(s.qt + c * tile + s.rows, s.qt + (c + 1) * tile, T(0));
  }
  for (std::size_t r = 0; r < tile; ++r) {
    s.m[r] = -std::numeric_limits<T>::infinity();
    s.l[r] = T(0);
    s.query_pos[r] =
        static_cast<T>(s.query[r < s.rows ? r : s.rows - 1]) + static_cast<T>(p.causal_offset);
  }
  std::fill(s.acc, s.acc + (s.on_lanes() ? p.d_v * tile : s.rows * dvp), T(0));
}

/// Whether some of a run of n mask bytes are set (nonzero), and whether every one is.
struct byte_cover {
  bool any, every;
};
inline byte_cover bytes_cover(const std::uint8_t* x, std::size_t n) noexcept {
  // Eight bytes a step: (w - 0x01..01) & ~w & 0x80..80 is nonzero exactly when some byte of
  // w is 0 (at -O2 the compiler does not vectorise the byte loop; a pair mask's tile is read
  // once per row of a set, 16 MB per head at n 4096).
  constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  std::uint64_t set = 0, zero = 0;
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    std::uint64_t w;
    std::memcpy(&w, x + j, sizeof w);
    set |= w;
    zero |= (w - ones) & ~w & highs;
  }
  for (; j < n; ++j) {
    set |= x[j];
    zero |= x[j] == 0 ? 1U : 0U;
  }
  return {set != 0, zero == 0};
}

/// What a boolean mask says of a tile's pairs: none ignored, some, or every one.
enum class tile_cover { none, some, all };

/// The cover of `rows` runs of n mask bytes, row(r) the first byte of run r.
template <class Row>
tile_cover rows_cover(std::size_t rows, std::size_t n, Row row) noexcept {
  bool some = false, every = true;
  for (std::size_t r = 0; r < rows; ++r) {
    const byte_cover c = bytes_cover(row(r), n);
    some = some || c.any;
    every = every && c.every;
    if (some && !every) return tile_cover::some;
  }
  return every ? tile_cover::all : some ? tile_cover::some : tile_cover::none;
}

/// A pair mask shared by every batch item and head (ignore_where's (seq_q, seq_kv) tensor:
/// ignore_batch and ignore_head 0), summarised once per call: for each block of `block` (16)
/// consecutive queries and each key, one byte whose bit 0 says that some query of the block
/// ignores the key and bit 1 that every one does. A tile's cover for whole blocks then takes
/// a byte per key and block rather than one per pair, and every head reads the same summary:
/// counted pair by pair, the mask was read again for each head (n² bytes a head, from L3 at
/// n 4096). Rows that are not whole blocks have the cover of the blocks that hold them, which
/// is theirs where it is all or none. The forward's query tiles (16 floats with AVX2, 64 with
/// AVX-512) and the backward's (64) are whole blocks. ceil(seq_q / 16) · seq_kv bytes, for
/// the call; the same on every instruction set.
class pair_mask_summary {
  /// A register of mask bytes.
  using byte_vector = std::uint8_t __attribute__((vector_size(simd_bytes)));

 public:
  static constexpr std::size_t block = 16;  // queries
  /// Holds nothing (holds() is false) unless p has a pair mask shared by every batch item and
  /// head.
  template <class T>
  explicit pair_mask_summary(const attention_problem<T>& p) {
    if (bytes(p) == 0) return;
    seq_q_ = p.seq_q, seq_kv_ = p.seq_kv;
    const std::size_t blocks = (seq_q_ + block - 1) / block;
    bits_.resize(blocks * seq_kv_);
    parallel_for(blocks, [&](std::size_t qb, std::size_t) {
      std::uint8_t* bits = bits_.data() + qb * seq_kv_;
      const std::uint8_t* rows = p.ignore + qb * block * p.ignore_row;
      const std::size_t count = std::min(block, seq_q_ - qb * block);
      // Down the block's rows, a key's byte gets bit 0 where some row ignores it (any) and
      // bit 1 where every row does (every). A register of keys a step where registers are
      // wider than eight bytes, a byte compare per row (Zen 3, AVX2, the dense documents at
      // n 4096: 3 % of the time, against 6 % eight keys a step); then eight keys a step; then
      // one. (The compiler does not vectorise the byte loop: written so, the summary took a
      // fifth of the loop nest's time at n 4096.)
      std::size_t j = 0;
      if constexpr (simd_bytes > sizeof(std::uint64_t)) {
        for (; j + simd_bytes <= seq_kv_; j += simd_bytes) {
          byte_vector any{}, every = ~byte_vector{};
          for (std::size_t r = 0; r < count; ++r) {
            byte_vector w;
            std::memcpy(&w, rows + r * p.ignore_row + j, sizeof w);
            const auto set = (byte_vector)(w != 0);  // 0xFF where the byte is set
            any |= set, every &= set;
          }
          const byte_vector word = (any & 1) | (every & 2);
          std::memcpy(bits + j, &word, sizeof word);
        }
      }
      constexpr std::uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, ones = 0x0101010101010101ULL;
      for (; j + 8 <= seq_kv_; j += 8) {
        std::uint64_t any = 0, every = ones;
        for (std::size_t r = 0; r < count; ++r) {
          std::uint64_t w;
          std::memcpy(&w, rows + r * p.ignore_row + j, sizeof w);
          const std::uint64_t set = ((((w & low7) + low7) | w) >> 7) & ones;  // byte != 0
          any |= set, every &= set;
        }
        const std::uint64_t word = any | every << 1;
        std::memcpy(bits + j, &word, sizeof word);
      }
      for (; j < seq_kv_; ++j) {
        unsigned any = 0, every = 1;
        for (std::size_t r = 0; r < count; ++r) {
          const unsigned set = rows[r * p.ignore_row + j] != 0 ? 1U : 0U;
          any |= set, every &= set;
        }
        bits[j] = static_cast<std::uint8_t>(any | every << 1);
      }
    });
  }
  /// The bytes the summary of p allocates: 0 where it holds nothing.
  template <class T>
  static std::size_t bytes(const attention_problem<T>& p) noexcept {
    const bool shared = p.ignore != nullptr && p.ignore_batch == 0 && p.ignore_head == 0;
    return shared ? (p.seq_q + block - 1) / block * p.seq_kv : 0;
  }
  bool holds() const noexcept { return seq_q_ != 0; }
  /// Whether queries [i_begin, i_end) are whole blocks (the last block may be short).
  bool whole_blocks(std::size_t i_begin, std::size_t i_end) const noexcept {
    return i_begin % block == 0 && (i_end % block == 0 || i_end == seq_q_);
  }
  /// The cover of keys [j0, j0 + n) for every query of the blocks that hold queries
  /// [i_begin, i_end) (i_begin < i_end <= seq_q).
  tile_cover cover(std::size_t i_begin, std::size_t i_end, std::size_t j0,
                   std::size_t n) const noexcept {
    constexpr std::uint64_t some_bits = 0x0101010101010101ULL, every_bits = 2 * some_bits;
    std::uint64_t some = 0, every = ~std::uint64_t(0);
    for (std::size_t qb = i_begin / block; qb < (i_end + block - 1) / block; ++qb) {
      const std::uint8_t* x = bits_.data() + qb * seq_kv_ + j0;
      // The next key tile's bytes, which the loop nest asks for after this tile's products
      // (the summary is seq_kv bytes a block, 1 MB at n 4096, more than an L2; with the
      // vector reads above, the dense documents at n 4096 about 3 % faster on Zen 3).
      for (std::size_t k = n; k < 2 * n && j0 + k < seq_kv_; k += 64) __builtin_prefetch(x + k);
      std::size_t j = 0;
      if constexpr (simd_bytes > sizeof(std::uint64_t)) {  // a register of keys a step
        byte_vector vsome{}, vevery = ~byte_vector{};
        for (; j + simd_bytes <= n; j += simd_bytes) {
          byte_vector w;
          std::memcpy(&w, x + j, sizeof w);
          vsome |= w, vevery &= w;
        }
        for (std::size_t k = 0; k < simd_bytes; k += sizeof(std::uint64_t)) {
          std::uint64_t a, e;
          std::memcpy(&a, reinterpret_cast<const unsigned char*>(&vsome) + k, sizeof a);
          std::memcpy(&e, reinterpret_cast<const unsigned char*>(&vevery) + k, sizeof e);
          some |= a, every &= e;
        }
      }
      for (; j + 8 <= n; j += 8) {
        std::uint64_t w;
        std::memcpy(&w, x + j, sizeof w);
        some |= w, every &= w;
      }
      for (; j < n; ++j) some |= x[j], every &= x[j] | ~std::uint64_t(0xFF);
      if ((some & some_bits) != 0 && (every & every_bits) != every_bits) return tile_cover::some;
    }
    return (every & every_bits) == every_bits ? tile_cover::all : tile_cover::none;
  }

 private:
  std::vector<std::uint8_t> bits_;  // (ceil(seq_q / block), seq_kv)
  std::size_t seq_q_ = 0, seq_kv_ = 0;
};

/// The cover of the pair mask (ignore_where, p.ignore) over the rows of set s and keys
/// [j0, j0 + n): the loop nest skips a tile it ignores whole, as it skips one a kind of one's
/// own ignores (ignores_block), and leaves the mask out of mask_tile where it ignores none.
/// From the call's summary where it holds the mask; counted pair by pair where it does not,
/// or where its blocks hold other queries than the set's and cover some of them. (A set's
/// rows are consecutive rows of its item, so its queries are all of [min_query, max_query]
/// when it has that many rows.)
template <class T>
tile_cover pair_mask_cover(const flash_item<T>& it, const row_set<T>& s, std::size_t j0,
                           std::size_t n) noexcept {
  const attention_problem<T>& p = *it.p;
  if (it.pair_summary != nullptr && it.pair_summary->holds()) {
    const std::size_t i_end = s.max_query + 1;
    const tile_cover c = it.pair_summary->cover(s.min_query, i_end, j0, n);
    if (c != tile_cover::some ||
        (s.rows == i_end - s.min_query && it.pair_summary->whole_blocks(s.min_query, i_end)))
      return c;
  }
  return rows_cover(s.rows, n, [&](std::size_t r) {
    return p.ignore + it.b * p.ignore_batch + s.head[r] * p.ignore_head +
           s.query[r] * p.ignore_row + j0;
  });
}

/// Bit j of the result: row[j] != 0, for j < m <= 8 · sizeof(U). Reads row[0, m) only.
template <class U>
[[gnu::always_inline]] inline U nonzero_bytes(const std::uint8_t* row, std::size_t m) noexcept {
  static_assert(std::is_unsigned_v<U>);
  U bits = 0;
  std::size_t j = 0;
#if defined(__AVX2__)
  for (; j + 32 <= m; j += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j));
    const auto zero = static_cast<std::uint32_t>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_setzero_si256())));
    bits |= static_cast<U>(~zero) << j;
  }
#endif
#if defined(__SSE2__)
  for (; j + 16 <= m; j += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + j));
    const auto zero =
        static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_setzero_si128())));
    bits |= static_cast<U>(~zero & 0xFFFFU) << j;
  }
#endif
  for (; j < m; ++j) bits |= static_cast<U>(row[j] != 0) << j;
  return bits;
}

/// A register of unsigned integers as wide as T, lane for lane (declared outside any template:
/// a dependent vector_size would be dropped).
template <class T>
struct unsigned_lanes;
template <>
struct unsigned_lanes<float> {
  using lane = std::uint32_t;
  using type = std::uint32_t __attribute__((vector_size(simd_bytes)));
};
template <>
struct unsigned_lanes<double> {
  using lane = std::uint64_t;
  using type = std::uint64_t __attribute__((vector_size(simd_bytes)));
};

/// The pair mask (p.ignore) on the score tile of set s, keys [j0, j0 + n): -inf where it
/// ignores a pair. A register of rows at a time: each row's bytes for up to 32 keys (64 for
/// double) become one lane's bits, and each key some row ignores one select on the tile's
/// row of keys (the tile holds a key's rows side by side, the mask a row's keys).
template <class T>
void ignore_pairs(const flash_item<T>& it, const row_set<T>& s, std::size_t j0,
                  std::size_t n) noexcept {
  using V = simd<T>;
  using M = typename V::mask_type;
  using UM = typename unsigned_lanes<T>::type;  // unsigned: logical shifts
  using U = typename unsigned_lanes<T>::lane;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile, chunk = 8 * sizeof(U);
  const attention_problem<T>& p = *it.p;
  const V minus_inf = V::broadcast(-std::numeric_limits<T>::infinity());
  const std::uint8_t* base = p.ignore + it.b * p.ignore_batch + j0;
  for (std::size_t v = 0; v < s.rows; v += w) {
    const std::size_t rows = std::min(w, s.rows - v);
    for (std::size_t c = 0; c < n; c += chunk) {
      const std::size_t m = std::min(chunk, n - c);
      UM bits{};
      U any = 0;
      for (std::size_t l = 0; l < rows; ++l) {
        const std::size_t r = v + l;
        const U b =
            nonzero_bytes<U>(base + s.head[r] * p.ignore_head + s.query[r] * p.ignore_row + c, m);
        bits[l] = b;
        any |= b;
      }
      T* x = it.scores + c * tile + v;
      for (std::size_t j = 0; any != 0; ++j, any >>= 1, x += tile) {
        if ((any & 1) == 0) continue;
        const M hit = ((bits >> static_cast<U>(j)) & 1U) != 0U;
        select(hit, minus_inf, V::load(x)).store(x);
      }
    }
  }
}

/// The additive mask (p.additive) added to the score tile of set s, keys [j0, j0 + n): a
/// register of rows by a register of keys at a time, transposed in registers (the mask holds a
/// row's keys side by side, the tile a key's rows), so that each element is one lane of a
/// vector add rather than a load, an add and a store of its own across the tile's grain. The
/// lanes past s.rows add 0; the same sums as element by element.
template <class T>
void add_pairs(const flash_item<T>& it, const row_set<T>& s, std::size_t j0,
               std::size_t n) noexcept {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  const attention_problem<T>& p = *it.p;
  const T* base = p.additive + it.b * p.add_batch + j0;
  for (std::size_t v = 0; v < s.rows; v += w) {
    const std::size_t rows = std::min(w, s.rows - v);
    const T* a[w];  // the rows' masks (past `rows`, not read)
    for (std::size_t l = 0; l < w; ++l)
      a[l] = l < rows ? base + s.head[v + l] * p.add_head + s.query[v + l] * p.add_row : base;
    T* x = it.scores + v;
    for (std::size_t c = 0; c < n; c += w, x += w * tile) {
      const std::size_t keys = std::min(w, n - c);
      V block[w];  // unrolled, so that the block stays in registers
#pragma GCC unroll 16
      for (std::size_t l = 0; l < w; ++l)
        block[l] = l >= rows   ? V::zero()
                   : keys == w ? V::load(a[l] + c)
                               : V::load_partial(a[l] + c, keys);
      transpose(block);
#pragma GCC unroll 16
      for (std::size_t u = 0; u < w; ++u) {
        if (u >= keys) break;
        (V::load(x + u * tile) + block[u]).store(x + u * tile);
      }
    }
  }
}

/// Applies the masks to the score tile of set s (keys [j0, j0 + n)); false when no mask
/// touches the tile. The causal test runs on whole registers; the additive mask a register of
/// rows by a register of keys at a time (add_pairs); the pair mask a register of rows at a
/// time (ignore_pairs), only where pairs_ignored (its cover is some: run_item skips the tiles
/// it covers whole).
template <class T>
bool mask_tile(const flash_item<T>& it, const row_set<T>& s, std::size_t j0, std::size_t n,
               bool any_key_ignored, bool pairs_ignored) {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  const attention_problem<T>& p = *it.p;
  const T minus_inf = -std::numeric_limits<T>::infinity();
  T* st = it.scores;
  bool masked = false;
  if (p.additive != nullptr) {
    masked = true;
    add_pairs(it, s, j0, n);
  }
  if (p.code.apply != nullptr && p.code.adds) {
    masked = true;
    p.code.apply(p.code.context, it.b, s.head, s.query, s.rows, j0, n, st, 1, tile);
  }
  // The tile crosses the diagonal (a key past some row's reach) or a window's start (a key
  // before some row's first).
  if (p.causal &&
      (j0 + n > causal_key_end(p, s.min_query + 1) || j0 < causal_key_begin(p, s.max_query))) {
    masked = true;
    const V inf = V::broadcast(minus_inf), window = V::broadcast(static_cast<T>(p.causal_window));
    for (std::size_t j = 0; j < n; ++j) {
      const V key = V::broadcast(static_cast<T>(j0 + j));
      for (std::size_t v = 0; v < s.lanes(); v += w) {
        const V x = V::load(st + j * tile + v), pos = V::load(s.query_pos + v);
        // ignored: key > pos (past the reach) or key <= pos − window (before the window)
        select(pos.v < key.v, inf, select(key.v <= (pos - window).v, inf, x))
            .store(st + j * tile + v);
      }
    }
  }
  if (any_key_ignored) {
    masked = true;
    const std::uint8_t* ki = p.key_ignore + it.b * p.key_ignore_batch + j0;
    for (std::size_t j = 0; j < n; ++j)
      if (ki[j] != 0) std::fill(st + j * tile, st + j * tile + s.lanes(), minus_inf);
  }
  if (p.ignore != nullptr && pairs_ignored) {
    masked = true;
    ignore_pairs(it, s, j0, n);
  }
  if (p.code.apply != nullptr && !p.code.adds) {
    masked = true;
    p.code.apply(p.code.context, it.b, s.head, s.query, s.rows, j0, n, st, 1, tile);
  }
  return masked;
}

/// Whether some mask of p ignores key j for query i of head h, batch item b: a causal,
/// padding or pair mask, or an additive -inf that leaves the logit -inf. NaN + -inf is NaN
/// (semantics.md, rule 2): where scale · q_i·k_j is NaN or +inf, an additive -inf ignores
/// nothing, and the pair makes its row NaN in the output and, through the pair, in the
/// gradients (rule 9). Only a pair with an additive -inf pays for the dot product.
template <class T>
bool mask_ignores(const attention_problem<T>& p, std::size_t b, std::size_t h, std::size_t i,
                  std::size_t j) {
  if (p.causal && (j >= causal_key_end(p, i + 1) || j < causal_key_begin(p, i))) return true;
  if (p.key_ignore != nullptr && p.key_ignore[b * p.key_ignore_batch + j] != 0) return true;
  if (p.ignore != nullptr &&
      p.ignore[b * p.ignore_batch + h * p.ignore_head + i * p.ignore_row + j] != 0)
    return true;
  const bool code_adds = p.code.apply != nullptr && p.code.adds;
  if (p.code.apply != nullptr && !code_adds &&
      p.code.value(b, h, i, j) == -std::numeric_limits<T>::infinity())
    return true;
  if (p.additive == nullptr && !code_adds) return false;
  const T added =
      (p.additive != nullptr ? p.additive[b * p.add_batch + h * p.add_head + i * p.add_row + j]
                             : T(0)) +
      (code_adds ? p.code.value(b, h, i, j) : T(0));
  if (added != -std::numeric_limits<T>::infinity()) return false;
  const T* q = p.q + b * p.q_batch + h * p.q_head + i * p.q_row;
  const T* k = p.k + b * p.k_batch + h / (p.heads / p.kv_heads) * p.k_head + j * p.k_row;
  T dot = 0;
  for (std::size_t c = 0; c < p.d_k; ++c) dot += q[c] * k[c];
  const T logit = p.scale * dot;
  return !(std::isnan(logit) || logit == std::numeric_limits<T>::infinity());
}

/// The V rows of a masked tile that are not finite, as offsets from j0, and a copy of the
/// tile (K_TILE, DVP) with those rows zeroed.
template <class T>
struct unclean_values {
  std::vector<std::size_t> rows;
  std::vector<T> clean;
};

/// After value_tile ran on the cleaned tile: adds p · v for each unclean V row to the rows of
/// set s that no mask keeps from it. The tile's keys are j0 + [0, nk), the rows in `unclean`
/// indices into them; the set scored keys j0 + [first, n), its scores from it.scores' first row.
template <class T>
void add_unclean_values(const flash_item<T>& it, const row_set<T>& s, std::size_t j0,
                        std::size_t first, std::size_t n, const std::vector<std::size_t>& unclean,
                        const T* v_base) {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const attention_problem<T>& p = *it.p;
  for (std::size_t jj : unclean) {
    if (jj < first) continue;  // before every row's window: the set did not score it
    if (jj >= n) break;  // the rows are in order; later keys are past every row's causal reach
    const T* v = v_base + (j0 + jj) * p.v_row;
    for (std::size_t r = 0; r < s.rows; ++r) {
      if (mask_ignores(p, it.b, s.head[r], s.query[r], j0 + jj)) continue;
      const T w = it.scores[(jj - first) * tile + r];
      for (std::size_t c = 0; c < p.d_v; ++c) s.out(r, c, it.dvp) += w * v[c];
    }
  }
}

/// The first key from ja on that some row of the item sees: ja, or under a causal mask with a
/// window the start of its first row's window.
template <class T>
std::size_t item_keys_begin(const flash_item<T>& it, std::size_t ja) noexcept {
  if (!it.p->causal) return ja;
  std::size_t first = std::numeric_limits<std::size_t>::max();
  for (std::size_t si = 0; si < it.set_count; ++si)
    first = std::min(first, causal_key_begin(*it.p, it.sets[si].min_query));
  return std::max(ja, first);
}

/// The end of the keys below jb that some row of the item sees: jb, or under a causal mask
/// the reach of its last query.
template <class T>
std::size_t item_keys_end(const flash_item<T>& it, std::size_t jb) noexcept {
  if (!it.p->causal) return jb;
  std::size_t reach = 0;
  for (std::size_t si = 0; si < it.set_count; ++si)
    reach = std::max(reach, causal_key_end(*it.p, it.sets[si].max_query + 1));
  return std::min(jb, reach);
}

/// The cache lines of an item's output rows, asked for (for writing) a few at a time, one
/// batch per key tile, so that they have arrived when store_set writes them. Written cold,
/// the rows' stores wait for lines that no nearby cache holds and fill the store buffer:
/// store_set took 5.8-6.1 us of an item at n 1024 on an Intel Xeon, 1.5-1.8 with this, and
/// the loop nest runs 0.5-1 % faster (docs/performance.md, "The output's cache lines,
/// fetched ahead"). Asked for all at once at the item's start, they gained nothing.
template <class T>
class output_prefetch {
 public:
  /// Spread over the key tiles of [ja, jb) (one call of next() each).
  output_prefetch(const flash_item<T>& it, std::size_t ja, std::size_t jb) noexcept : it_(it) {
    // One more than a row's lines: a row that does not start on a line ends in one more.
    const std::size_t lines_per_row = (it.p->d_v * sizeof(T) + 63) / 64 + 1;
    const std::size_t begin = item_keys_begin(it, ja), end = item_keys_end(it, jb);
    const std::size_t tiles = end > begin ? (end - begin + it.k_tile - 1) / it.k_tile : 0;
    std::size_t rows = 0;
    for (std::size_t si = 0; si < it.set_count; ++si) rows += it.sets[si].rows;
    lines_ = lines_per_row;
    per_tile_ = tiles == 0 ? 0 : (rows * lines_per_row + tiles - 1) / tiles;
  }
  /// The next batch of lines.
  void next() noexcept {
    const attention_problem<T>& p = *it_.p;
    for (std::size_t n = 0; n < per_tile_ && set_ < it_.set_count; ++n) {
      const row_set<T>& s = it_.sets[set_];
      const T* o = p.o + it_.b * p.o_batch + s.head[row_] * p.o_head + s.query[row_] * p.o_row;
      // Every 64 bytes from the row's start, and its last element.
      __builtin_prefetch(o + std::min(line_ * (64 / sizeof(T)), p.d_v - 1), 1, 3);
      if (++line_ == lines_) {
        line_ = 0;
        if (++row_ == s.rows) row_ = 0, ++set_;
      }
    }
  }

 private:
  const flash_item<T>& it_;
  std::size_t lines_ = 0, per_tile_ = 0;
  std::size_t set_ = 0, row_ = 0, line_ = 0;
};

/// How the keys [j0, j0 + n) that set s scores fall to the halves of its lanes under a causal
/// mask (splits_lane_halves): the lower half's rows see none from lower_end on (past their
/// reach), the upper half's none before upper_begin (before their windows), so that keys [0,
/// min(upper_begin, lower_end)) are the lower half's alone, [upper_begin, lower_end) both halves'
/// and [max(upper_begin, lower_end), n) the upper half's alone; each half scores and sums only
/// its own (run_item), and a set of q_tile rows computes half the triangle past its rows' reach
/// (or before their windows) that it did. `split` false (the whole tile on every lane): without
/// a causal mask, on targets of fewer than four registers of queries, for a set of at most half
/// a tile of rows, or where both halves see the whole tile.
struct lane_halves {
  bool split;
  std::size_t upper_begin, lower_end;
};

template <class T>
lane_halves halves_of(const attention_problem<T>& p, const row_set<T>& s, std::size_t j0,
                      std::size_t n) noexcept {
  constexpr std::size_t half = flash_blocking<T>::q_tile / 2;
  if (!splits_lane_halves<T> || !p.causal || !s.on_lanes() || s.rows <= half ||
      (j0 + n <= causal_key_end(p, s.min_query + 1) && j0 >= causal_key_begin(p, s.max_query)))
    return {false, 0, n};
  // The lower half's last query and the upper half's first (a set's rows need not be in order).
  std::size_t last = 0, first = std::numeric_limits<std::size_t>::max();
  for (std::size_t r = 0; r < half; ++r) last = std::max(last, s.query[r]);
  for (std::size_t r = half; r < s.rows; ++r) first = std::min(first, s.query[r]);
  const std::size_t reach = causal_key_end(p, last + 1), begin = causal_key_begin(p, first);
  const lane_halves h{true, begin <= j0 ? 0 : std::min(n, begin - j0),
                      reach <= j0 ? 0 : std::min(n, reach - j0)};
  return h.upper_begin == 0 && h.lower_end == n ? lane_halves{false, 0, n} : h;
}

/// Runs the sets of an item (started) over keys [ja, jb).
template <class T>
void run_item(const flash_item<T>& it, std::size_t ja, std::size_t jb,
              output_prefetch<T>* prefetch = nullptr) {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const attention_problem<T>& p = *it.p;
  const std::size_t j_begin = item_keys_begin(it, ja), j_end = item_keys_end(it, jb);
  std::size_t min_query = p.seq_q, max_query = 0;
  for (std::size_t si = 0; si < it.set_count; ++si) {
    min_query = std::min(min_query, it.sets[si].min_query);
    max_query = std::max(max_query, it.sets[si].max_query);
  }
  // Under a causal mask, keys from causal_reach on are past some row's reach, keys before
  // window_start before some row's window.
  const std::size_t causal_reach = p.causal ? causal_key_end(p, min_query + 1) : 0;
  const std::size_t window_start = p.causal ? causal_key_begin(p, max_query) : 0;
  thread_local unclean_values<T> unclean;
  const attention_dropout<T> drop(p.dropout_rate, p.dropout_seed);
  const T* k_base = p.k + it.b * p.k_batch + it.g * p.k_head;
  const T* v_base = p.v + it.b * p.v_batch + it.g * p.v_head;
  const std::uint8_t* key_ignore =
      p.key_ignore ? p.key_ignore + it.b * p.key_ignore_batch : nullptr;
  // What set s does with keys [j0, j0 + nk): the keys [j0 + first, j0 + n) its rows see
  // (under a causal mask, up to the last row's reach and, under a window, from the first row's
  // window on) and the pair mask's cover of them; none (first == n) where it skips the tile:
  // past every row's reach or before every row's window, ignored whole by the pair mask or by
  // a kind of one's own (ignores_block).
  struct set_tile {
    std::size_t first, n;
    tile_cover pairs;
  };
  auto plan_set = [&](const row_set<T>& s, std::size_t j0, std::size_t nk) -> set_tile {
    std::size_t first = 0, n = nk;
    if (p.causal) {
      const std::size_t reach = causal_key_end(p, s.max_query + 1);
      if (j0 >= reach) return {0, 0, tile_cover::all};  // the whole tile is in every row's future
      n = std::min(n, reach - j0);
      const std::size_t window = causal_key_begin(p, s.min_query);
      if (j0 + n <= window) return {0, 0, tile_cover::all};
      // Keys before every row's window: not scored, as keys past every row's reach are not
      // (where a set's window starts inside a tile, up to a tile of keys each).
      first = window > j0 ? window - j0 : 0;
    }
    const tile_cover pairs =
        p.ignore != nullptr ? pair_mask_cover(it, s, j0 + first, n - first) : tile_cover::none;
    if (pairs == tile_cover::all) return {0, 0, tile_cover::all};
    if (p.code.ignores_tile != nullptr &&
        p.code.ignores_tile(p.code.context, it.b, s.head, s.query, s.rows, j0 + first, n - first))
      return {0, 0, tile_cover::all};
    return {first, n, pairs};
  };
  for (std::size_t j0 = j_begin; j0 < j_end; j0 += it.k_tile) {
    const std::size_t nk = std::min(it.k_tile, j_end - j0);
    if (prefetch != nullptr) prefetch->next();
    // A tile of padded keys only (the tail of a shorter sequence, say) adds nothing to any
    // row: skipped, as a causal mask's tiles past every row's reach are.
    const byte_cover keys =
        key_ignore != nullptr ? bytes_cover(key_ignore + j0, nk) : byte_cover{false, false};
    if (keys.every) continue;
    const bool any_key_ignored = keys.any;
    const T* vt = v_base + j0 * p.v_row;
    std::size_t v_row = p.v_row;
    // The tile's V rows are checked (and packed) when the first set that computes the tile
    // needs them: a tile that every set skips (ignore_where, a kind's ignores_block, a causal
    // mask) costs no read of its V rows (a read of the whole V per item: at n 4096 a fifth of
    // the time of packed documents' loop nest), and each set's plan is made once.
    auto prepare_values = [&] {
      // The V rows of keys some mask may ignore for some row of the item (padded keys, keys past
      // a row's causal reach, or any key under a pair or additive mask): one accumulator over
      // them all, and only when it sees a NaN or an infinity, the rows that are not finite.
      unclean.rows.clear();
      const bool pairwise = p.pair_masks();
      const bool crosses = p.causal && (j0 + nk > causal_reach || j0 < window_start);
      if (pairwise || crosses || any_key_ignored) {
        auto may_be_ignored = [&](std::size_t j) {
          return pairwise || (crosses && (j0 + j >= causal_reach || j0 + j < window_start)) ||
                 (any_key_ignored && key_ignore[j0 + j] != 0);
        };
        simd<T> seen = simd<T>::zero();
        for (std::size_t j = 0; j < nk; ++j)
          if (may_be_ignored(j)) seen = accumulate_non_finite(vt + j * p.v_row, p.d_v, seen);
        if (!saw_only_finite(seen))
          for (std::size_t j = 0; j < nk; ++j)
            if (may_be_ignored(j) && !all_finite(vt + j * p.v_row, p.d_v))
              unclean.rows.push_back(j);
      }
      if (!unclean.rows.empty()) {
        unclean.clean.assign(nk * it.dvp, T(0));
        for (std::size_t j = 0, u = 0; j < nk; ++j) {
          if (u < unclean.rows.size() && unclean.rows[u] == j) {
            ++u;
            continue;
          }
          std::copy(vt + j * p.v_row, vt + j * p.v_row + p.d_v, unclean.clean.data() + j * it.dvp);
        }
        vt = unclean.clean.data();
        v_row = it.dvp;
      } else if (it.v_pack != nullptr) {
        for (std::size_t j = 0; j < nk; ++j) {
          std::copy(vt + j * p.v_row, vt + j * p.v_row + p.d_v, it.v_pack + j * it.dvp);
          std::fill(it.v_pack + j * it.dvp + p.d_v, it.v_pack + (j + 1) * it.dvp, T(0));
        }
        vt = it.v_pack;
        v_row = it.dvp;
      }
    };
    bool prepared = false;
    const T* kt = k_base + j0 * p.k_row;
    const key_stream stream{reinterpret_cast<std::uintptr_t>(kt),
                            reinterpret_cast<std::uintptr_t>(v_base + j0 * p.v_row),
                            nk,
                            p.k_row * sizeof(T),
                            p.v_row * sizeof(T),
                            p.d_k * sizeof(T),
                            p.d_v * sizeof(T),
                            key_fetch_ahead_bytes / (p.d_k * sizeof(T)),
                            it.fetches_into_l1};
    // The first set that scores the tile fetches as it goes (score_dots and value_tile, or
    // score_tile for rows on lanes; the rows of one decode item are one set but for groups of
    // more than a tile's rows).
    const key_stream* fetch = it.streams_keys ? &stream : nullptr;
    for (std::size_t si = 0; si < it.set_count; ++si) {
      row_set<T>& s = it.sets[si];
      const auto [first, end, pairs] = plan_set(s, j0, nk);
      if (first == end) continue;  // no weight of the tile is other than 0 for the set's rows
      if (!prepared) prepare_values(), prepared = true;
      // The set's keys, js + [0, n): the tile's from `first` on, its K and V rows from ks, vs.
      const std::size_t js = j0 + first, n = end - first;
      const T *ks = kt + first * p.k_row, *vs = vt + first * v_row;
      // The stream counts from the tile's first key: a set that starts further on leaves it.
      const key_stream* set_fetch = first == 0 ? std::exchange(fetch, nullptr) : nullptr;
      const lane_halves h = halves_of(p, s, js, n);
      // The halves' key ranges (halves_of): [0, lower_alone), [both, h.lower_end) (where both <
      // h.lower_end) and [upper_alone, n).
      const std::size_t lower_alone = std::min(h.upper_begin, h.lower_end), both = h.upper_begin,
                        upper_alone = std::max(h.upper_begin, h.lower_end);
      if (h.split) {
        constexpr T minus_inf = -std::numeric_limits<T>::infinity();
        std::fill(it.top, it.top + tile, minus_inf);
        // The stream's keys count from the tile's first: it goes with the range that starts there.
        const auto score = [&](lane_half which, std::size_t from, std::size_t to) {
          if (from < to)
            score_lanes<T>(which, to - from, ks + from * p.k_row, p.k_row, s.qt, p.d_k,
                           it.scores + from * tile, it.top, from == 0 ? set_fetch : nullptr);
        };
        score(lane_half::lower, 0, lower_alone);
        score(lane_half::every, both, h.lower_end);
        score(lane_half::upper, upper_alone, n);
        // What a half does not score is -inf before mask_tile runs, so that no stale score can
        // pass for one where its test, on positions as T, rounds (past 2^24 in float).
        for (std::size_t j = 0; j < h.upper_begin; ++j)
          std::fill_n(it.scores + j * tile + tile / 2, tile / 2, minus_inf);
        for (std::size_t j = h.lower_end; j < n; ++j)
          std::fill_n(it.scores + j * tile, tile / 2, minus_inf);
      } else if (s.on_lanes()) {
        score_tile<T>(s.lanes(), n, ks, p.k_row, s.qt, p.d_k, it.scores, it.top, set_fetch);
      } else {
        score_dots<T>(s.rows, s.q, p.scale, p.d_k, n, ks, p.k_row, it.scores, it.top, set_fetch);
      }
      if (mask_tile(it, s, js, n, any_key_ignored, pairs == tile_cover::some))
        tile_maximum(it.scores, n, s.lanes(), it.top);
      const bool rescale = softmax_step(s.lanes(), it.scores, n, it.top, s.m, s.l, s.alpha);
      if (drop.active())  // after l took the undropped weights: only the sum over V drops them
        drop.apply_tile(it.b, s.head, s.query, s.rows, js, n, it.scores, flash_blocking<T>::q_tile);
      if (h.split) {
        // alpha goes with the first call where that call takes every lane, else before them all.
        const bool every_first = lower_alone == 0 && both < h.lower_end;
        if (rescale && !every_first) rescale_lanes(s.lanes(), p.d_v, s.alpha, s.acc);
        const auto sum = [&](lane_half which, std::size_t from, std::size_t to, const T* alpha) {
          if (from < to)
            lane_value_lanes<T>(which, p.d_v, to - from, it.scores + from * tile, vs + from * v_row,
                                v_row, alpha, s.acc);
        };
        sum(lane_half::lower, 0, lower_alone, nullptr);
        sum(lane_half::every, both, h.lower_end, rescale && every_first ? s.alpha : nullptr);
        sum(lane_half::upper, upper_alone, n, nullptr);
      } else if (s.on_lanes()) {
        lane_value_tile<T>(s.lanes(), p.d_v, n, it.scores, vs, v_row, rescale ? s.alpha : nullptr,
                           s.acc);
      } else {
        value_tile<T>(s.rows, it.dvp, n, it.scores, vs, v_row, s.alpha, s.acc, set_fetch);
      }
      if (!unclean.rows.empty()) add_unclean_values(it, s, j0, first, end, unclean.rows, v_base);
    }
  }
}

/// The output rows of set s: acc / l, or 0 where l == 0 (every key masked).
template <class T>
void store_set(const attention_problem<T>& p, std::size_t b, const row_set<T>& s, std::size_t dvp) {
  using V = simd<T>;
  constexpr std::size_t w = V::width, tile = flash_blocking<T>::q_tile;
  auto out_row = [&](std::size_t r) {
    return p.o + b * p.o_batch + s.head[r] * p.o_head + s.query[r] * p.o_row;
  };
  // 1 / l per row (0 where l is 0: a row with no key), one division per register of rows
  // rather than one per row and register of columns; the same values as the scalar 1 / l.
  alignas(buffer_alignment) T inverse[tile];
  for (std::size_t v = 0; v < tile; v += w) {
    const V l = V::load(s.l + v);
    select(l.v > V::zero().v, V::broadcast(T(1)) / l, V::zero()).store(inverse + v);
  }
  if (s.on_lanes()) {
    // acc^T (D_V, Q_TILE): width × width register transposes give width rows at a time (the
    // lanes past `rows` are padding, read and not stored).
    for (std::size_t r0 = 0; r0 < s.rows; r0 += w) {
      const std::size_t rows = std::min(w, s.rows - r0);
      T* out[w];
      for (std::size_t u = 0; u < rows; ++u) out[u] = out_row(r0 + u);
      for (std::size_t c0 = 0; c0 < p.d_v; c0 += w) {
        const std::size_t cols = std::min(w, p.d_v - c0);
        V block[w];  // unrolled (bounds tested per row), so that the block stays in registers
#pragma GCC unroll 16
        for (std::size_t u = 0; u < w; ++u)
          block[u] = u < cols ? V::load(s.acc + (c0 + u) * tile + r0) : V::zero();
        transpose(block);
#pragma GCC unroll 16
        for (std::size_t u = 0; u < w; ++u) {
          if (u >= rows) break;
          const V x = block[u] * V::broadcast(inverse[r0 + u]);
          if (cols == w)
            x.store(out[u] + c0);
          else
            x.store_partial(out[u] + c0, cols);
        }
      }
    }
  }
  for (std::size_t r = 0; r < s.rows; ++r) {
    if (!s.on_lanes()) {
      const V inv = V::broadcast(inverse[r]);
      T* o = out_row(r);
      const T* a = s.acc + r * dvp;
      std::size_t c = 0;
      for (; c + w <= p.d_v; c += w) (V::load(a + c) * inv).store(o + c);
      if (c < p.d_v) (V::load(a + c) * inv).store_partial(o + c, p.d_v - c);
    }
    if (p.lse != nullptr)
      p.lse[b * p.lse_batch + s.head[r] * p.lse_head + s.query[r]] =
          s.l[r] == T(0) ? -std::numeric_limits<T>::infinity() : s.m[r] + std::log(s.l[r]);
  }
}

/// How flash_attention_tiles_of_queries cuts a problem into work items: each item is one
/// batch item, one K/V head, a run of `span` query tiles and `per_item` query heads of the
/// group, so that it holds item_rows rows when there are items enough for two per thread;
/// a group is split over `parts` items only when there would be too few items otherwise.
struct query_items {
  std::size_t q_tiles, pairs, span, runs, per_item, parts;
  std::size_t count() const noexcept { return pairs * parts * runs; }
  std::size_t sets() const noexcept { return per_item * span; }  // row sets per item
};

template <class T>
query_items plan_query_items(const attention_problem<T>& p) noexcept {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const std::size_t group = p.kv_heads == 0 ? 1 : std::max<std::size_t>(1, p.heads / p.kv_heads);
  const std::size_t threads = num_threads();
  query_items q{};
  q.q_tiles = (p.seq_q + tile - 1) / tile;
  q.pairs = p.batch * p.kv_heads;
  if (q.q_tiles == 0 || q.pairs == 0) {  // nothing to do (flash_attention returns first)
    q.span = q.per_item = q.parts = 1;
    return q;
  }
  q.span = std::max<std::size_t>(
      1, std::min((flash_blocking<T>::item_rows + tile * group - 1) / (tile * group),
                  q.q_tiles * q.pairs / (2 * threads)));
  q.runs = (q.q_tiles + q.span - 1) / q.span;
  const std::size_t parts =
      std::min(group, (2 * threads + q.pairs * q.runs - 1) / (q.pairs * q.runs));
  q.per_item = (group + parts - 1) / parts;
  q.parts = (group + q.per_item - 1) / q.per_item;
  return q;
}

/// Work item `task` of `plan`, started: this thread's scratch carved for it, its row sets
/// (query tiles × query heads of the group) filled in and started (start_set). Consecutive
/// items share a K/V head, whose K and V then stay in L2; within a head the costliest runs
/// come first (under a causal mask the last query tiles see the most keys).
template <class T>
flash_item<T> start_query_item(const attention_problem<T>& p, const query_items& plan,
                               const flash_layout<T>& layout, std::size_t task) {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const std::size_t group = p.heads / p.kv_heads;
  const std::size_t pair = task / (plan.parts * plan.runs), rest = task % (plan.parts * plan.runs);
  const std::size_t run = plan.runs - 1 - rest / plan.parts, part = rest % plan.parts;
  flash_item<T> it{&p,      pair / p.kv_heads, pair % p.kv_heads, nullptr, 0,
                   nullptr, nullptr,           nullptr,           0,       0,
                   nullptr};
  carve(layout, it);
  const std::size_t h0 = it.g * group + part * plan.per_item,
                    h1 = std::min(it.g * group + group, h0 + plan.per_item);
  for (std::size_t qt = run * plan.span; qt < std::min(plan.q_tiles, (run + 1) * plan.span); ++qt) {
    const std::size_t i0 = qt * tile, rows = std::min(tile, p.seq_q - i0);
    for (std::size_t h = h0; h < h1; ++h) {
      row_set<T>& s = it.sets[it.set_count++];
      s.rows = rows;
      for (std::size_t r = 0; r < rows; ++r) s.head[r] = h, s.query[r] = i0 + r;
      start_set(p, it.b, s, it.dvp);
    }
  }
  return it;
}

/// Calls of flash_attention_tiles_of_queries so far, each its number for first_of_pair.
inline std::atomic<std::uint64_t> items_calls{0};

/// A new number for a call's items (first_of_pair).
inline std::uint64_t next_items_call() noexcept {
  return items_calls.fetch_add(1, std::memory_order_relaxed);
}

/// Whether this thread's item of (batch item, K/V head) `pair` is its first of that pair in
/// call `call`; remembers it for the next.
inline bool first_of_pair(std::uint64_t call, std::size_t pair) noexcept {
  thread_local std::uint64_t last_call = ~std::uint64_t{0};
  thread_local std::size_t last_pair = 0;
  const bool first = call != last_call || pair != last_pair;
  last_call = call, last_pair = pair;
  return first;
}

/// A thread's first item of a K/V head finds that head's K and V in L3 or memory, the items
/// after it in its core's L2 where they fit (512 KiB at n 1024, d 64): it fetches them ahead as
/// it scores, as a decode item does (key_stream; into L1 on a roomy L1d, into L2 elsewhere).
/// Every item fetching: slower (Zen 5, n 4096, 0.96-0.99x), as the hardware's prefetchers keep
/// up with the items after the first; the first alone: the core at n 1024 0.6-1.0 % faster on 1
/// thread and 1.2-2.1 % on 2 with AVX-512 on Zen 5, the MHA's kernels 0.5-0.7 %, the AVX2 build
/// 0.8-1.4 % and its MHA 0.991-1.001 (docs/performance.md, "A head's first item fetches ahead").
template <class T>
void fetch_if_first_of_pair(flash_item<T>& it, std::uint64_t call, bool into_l1) noexcept {
  if (first_of_pair(call, it.b * it.p->kv_heads + it.g))
    it.streams_keys = true, it.fetches_into_l1 = into_l1;
}

/// Items (batch item, K/V head, run of query tiles), each with query heads of the group;
/// pairs: the call's summary of the pair mask.
/// (bench/kernel_attention.cpp's flash_item_parts times the three steps of an item.)
template <class T>
void flash_attention_tiles_of_queries(const attention_problem<T>& p,
                                      const pair_mask_summary& pairs) {
  const query_items plan = plan_query_items(p);
  const flash_layout<T> layout(p, plan.sets());
  const std::uint64_t call = next_items_call();
  const bool into_l1 = argus::detail::roomy_l1d();
  parallel_for(plan.count(), [&](std::size_t task, std::size_t) {
    flash_item<T> it = start_query_item(p, plan, layout, task);
    it.pair_summary = &pairs;
    fetch_if_first_of_pair(it, call, into_l1);
    output_prefetch<T> prefetch(it, 0, visible_keys(p));
    run_item<T>(it, 0, visible_keys(p), &prefetch);
    for (std::size_t si = 0; si < it.set_count; ++si) store_set(p, it.b, it.sets[si], it.dvp);
  });
}

/// Decode: items (batch item, K/V head, key chunk), each with all the rows of the group;
/// partial results merged afterwards.
template <class T>
void flash_attention_chunks_of_keys(const attention_problem<T>& p,
                                    const pair_mask_summary& pair_summary) {
  constexpr std::size_t tile = flash_blocking<T>::q_tile;
  const std::size_t group = p.heads / p.kv_heads;
  const std::size_t rows_total = group * p.seq_q;  // row = head in group · seq_q + query
  const std::size_t set_count = (rows_total + tile - 1) / tile;
  const std::size_t pairs = p.batch * p.kv_heads;
  const std::size_t first = first_visible_key(p);
  const std::size_t keys = visible_keys(p) - first;  // keys [first, first + keys)
  const flash_layout<T> layout(p, set_count);
  // Two items per thread, each chunk at least two key tiles long.
  const std::size_t most =
      std::max<std::size_t>(1, keys / (2 * flash_blocking<T>::k_tile(p.d_k, p.d_v, false)));
  const std::size_t chunks = std::min(most, (2 * num_threads() + pairs - 1) / pairs);
  const std::size_t chunk_keys = (keys + chunks - 1) / chunks;

  // Per (pair, chunk, row): m, l and the unnormalised accumulator (d_v).
  const std::size_t stride = p.d_v + 2;
  std::vector<T> partial(chunks > 1 ? pairs * chunks * rows_total * stride : 0);
  auto part_of = [&](std::size_t pair, std::size_t chunk, std::size_t row) {
    return partial.data() + ((pair * chunks + chunk) * rows_total + row) * stride;
  };

  const bool into_l1 = argus::detail::roomy_l1d();
  parallel_for(pairs * chunks, [&](std::size_t task, std::size_t) {
    const std::size_t pair = task / chunks, chunk = task % chunks;
    flash_item<T> it{&p,      pair / p.kv_heads, pair % p.kv_heads, nullptr, set_count,
                     nullptr, nullptr,           nullptr,           0,       0,
                     nullptr};
    carve(layout, it);
    it.pair_summary = &pair_summary;
    // Every decode item streams its K and V, whatever their size: in a model each layer's are
    // read once per token, the other layers' weights and caches between, so they come from
    // memory even where one layer's would fit the L3 (key_stream).
    it.streams_keys = true;
    it.fetches_into_l1 = into_l1;
    for (std::size_t si = 0; si < set_count; ++si) {
      row_set<T>& s = it.sets[si];
      s.rows = std::min(tile, rows_total - si * tile);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const std::size_t row = si * tile + r;
        s.head[r] = it.g * group + row / p.seq_q, s.query[r] = row % p.seq_q;
      }
      start_set(p, it.b, s, it.dvp);
    }
    const std::size_t ja = first + chunk * chunk_keys;
    const std::size_t jb = first + std::min(keys, chunk * chunk_keys + chunk_keys);
    output_prefetch<T> prefetch(it, ja, jb);  // used where the rows go to p.o (one chunk)
    run_item<T>(it, ja, jb, chunks == 1 ? &prefetch : nullptr);
    for (std::size_t si = 0; si < set_count; ++si) {
      const row_set<T>& s = it.sets[si];
      if (chunks == 1) {
        store_set(p, it.b, s, it.dvp);
        continue;
      }
      for (std::size_t r = 0; r < s.rows; ++r) {
        T* out = part_of(pair, chunk, si * tile + r);
        out[0] = s.m[r], out[1] = s.l[r];
        for (std::size_t c = 0; c < p.d_v; ++c) out[2 + c] = s.out(r, c, it.dvp);
      }
    }
  });
  if (chunks == 1) return;

  // O = Σ_c e^(m_c - M) acc_c / Σ_c e^(m_c - M) l_c with M = max_c m_c; chunks whose keys
  // were all masked (m_c = -inf) weigh 0 (their accumulators hold 0, or NaN from a key whose
  // logit came out -inf with a V row that is not finite, as in the tiled path), a row with no
  // key at all gets 0, and a row with a NaN logit in any chunk (m or l NaN) is NaN.
  const T minus_inf = -std::numeric_limits<T>::infinity();
  parallel_for(pairs, [&](std::size_t pair, std::size_t) {
    const std::size_t b = pair / p.kv_heads, g = pair % p.kv_heads;
    for (std::size_t row = 0; row < rows_total; ++row) {
      T* o =
          p.o + b * p.o_batch + (g * group + row / p.seq_q) * p.o_head + (row % p.seq_q) * p.o_row;
      T top = minus_inf;
      bool nan = false;
      for (std::size_t c = 0; c < chunks; ++c) {
        const T* part = part_of(pair, c, row);
        if (part[0] != part[0] || part[1] != part[1])
          nan = true;
        else
          top = std::max(top, part[0]);
      }
      std::fill(o, o + p.d_v, nan ? std::numeric_limits<T>::quiet_NaN() : T(0));
      T* lse =
          p.lse ? p.lse + b * p.lse_batch + (g * group + row / p.seq_q) * p.lse_head + row % p.seq_q
                : nullptr;
      if (lse != nullptr) *lse = nan ? std::numeric_limits<T>::quiet_NaN() : minus_inf;
      if (nan) continue;
      T sum = T(0);
      for (std::size_t c = 0; c < chunks; ++c) {
        const T* part = part_of(pair, c, row);
        const T weight =
            top == minus_inf || part[0] == minus_inf ? T(0) : exp_scalar(part[0] - top);
        sum += weight * part[1];
        for (std::size_t x = 0; x < p.d_v; ++x) o[x] += weight * part[2 + x];
      }
      const T inv = sum > T(0) ? T(1) / sum : T(0);
      for (std::size_t x = 0; x < p.d_v; ++x) o[x] *= inv;
      if (lse != nullptr && sum > T(0)) *lse = top + std::log(sum);
    }
  });
}

}  // namespace detail

/// The tiles flash_attention(p) uses: query rows per tile, keys per tile.
template <class T>
flash_tiles flash_attention_tiles(const attention_problem<T>& p) {
  using blocking = detail::flash_blocking<T>;
  return {blocking::q_tile, blocking::k_tile(p.d_k, p.d_v, detail::takes_key_floor(p))};
}

/// Scratch bytes flash_attention(p) holds per thread (kept for reuse by later calls) with
/// num_threads() threads; it does not grow with seq_q or seq_kv beyond item_rows query rows. A
/// decode-shaped call whose keys are split over threads also allocates, for that call, (m, l, d_v
/// accumulators) per row and key chunk: batch · heads · seq_q · chunks · (d_v + 2) elements, chunks
/// <= 2 · num_threads(); a call with a pair mask shared by every batch item and head, its summary:
/// ceil(seq_q / 16) · seq_kv bytes (pair_mask_summary).
template <class T>
std::size_t flash_attention_scratch_bytes(const attention_problem<T>& p) {
  constexpr std::size_t tile = detail::flash_blocking<T>::q_tile;
  const std::size_t group = p.kv_heads == 0 ? 1 : p.heads / p.kv_heads;
  const std::size_t sets = detail::decode_shaped(p) ? (group * p.seq_q + tile - 1) / tile
                                                    : detail::plan_query_items(p).sets();
  return detail::flash_layout<T>(p, sets).bytes();
}

/// Computes p.o from p.q, p.k, p.v and the masks of p, on num_threads() threads.
/// pre: kv_heads >= 1, heads % kv_heads == 0, d_k >= 1; O overlaps none of the inputs.
template <class T>
void flash_attention(const attention_problem<T>& p) {
  assert(p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && p.d_k >= 1);
  if (p.batch == 0 || p.heads == 0 || p.seq_q == 0 || p.d_v == 0) return;
  if (p.seq_kv == 0) {  // nothing to attend to: every row is fully masked
    for (std::size_t b = 0; b < p.batch; ++b)
      for (std::size_t h = 0; h < p.heads; ++h)
        for (std::size_t i = 0; i < p.seq_q; ++i) {
          T* o = p.o + b * p.o_batch + h * p.o_head + i * p.o_row;
          std::fill(o, o + p.d_v, T(0));
          if (p.lse != nullptr)
            p.lse[b * p.lse_batch + h * p.lse_head + i] = -std::numeric_limits<T>::infinity();
        }
    return;
  }
  const detail::pair_mask_summary pair_summary(p);  // the pair mask's, where it is shared
  if (detail::decode_shaped(p))
    detail::flash_attention_chunks_of_keys<T>(p, pair_summary);
  else
    detail::flash_attention_tiles_of_queries<T>(p, pair_summary);
}

// This header's entry points, declared for the program's use of the kernels
// (kernel/entry_points.hpp).
ARGUS_KERNEL_DECLARE_ENTRY_POINTS(ARGUS_KERNEL_FLASH_ATTENTION_ENTRY_POINTS)

}  // namespace ARGUS_KERNEL_ISA_NAMESPACE
}  // namespace argus::kernel
