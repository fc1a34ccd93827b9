// argus/viz/attention_map.hpp -- viz layer (optional): attention weights ready to draw.
//
//     const auto w = argus::evaluate(argus::attention_weights(y), argus::unfused);
//     argus::attention_map m = argus::make_attention_map(w, {.title = "layer 0",
//                                                            .query_tokens = tokens});
//     argus::write_attention_svg("attn.svg", m);     // viz/attention_svg.hpp
//     argus::write_attention_png("attn.png", m);     // viz/attention_png.hpp (stb)
//     std::cout << argus::attention_text(m);         // viz/attention_text.hpp
//
// An attention_map is one batch item's weights, (heads, seq_q, seq_kv), with row and column
// labels, a title and the top of the colour scale. This header also holds what the
// renderers share: the colour map (viridis, perceptually uniform and readable in grey) and
// the picture's layout, so that the SVG and the PNG are the same picture, and the checks
// every renderer makes at its entry: that its argument is an attention_map
// (argument_is_an_attention_map, at compile time) and that the map's fields agree (at run time).
// Not included by argus.hpp: the viz/ headers are optional.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/node.hpp>
#include <argus/shape/shape.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_concepts.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace argus {

/// How make_attention_map reads the weights and labels the picture.
struct attention_picture_options {
  std::string title = "attention weights";
  std::vector<std::string> query_tokens{};  ///< row labels (seq_q of them); empty: 0, 1, 2, ...
  std::vector<std::string> key_tokens{};    ///< column labels (seq_kv); empty: query_tokens when
                                            ///< seq_kv == seq_q (self-attention), else 0, 1, ...
  std::size_t batch_item = 0;               ///< which item of the batch to draw
  std::size_t columns = 4;                  ///< head panels per row of the picture (0: all in one)
  double scale_max = 0;  ///< value drawn in the top colour, positive and finite; 0: the largest
                         ///< weight (negative, NaN or infinite: std::invalid_argument)
};

/// One batch item's attention weights with what a picture needs to label them.
struct attention_map {
  std::size_t heads = 0, seq_q = 0, seq_kv = 0;
  std::vector<double> weights;  ///< (heads, seq_q, seq_kv), row-major
  std::vector<std::string> query_labels, key_labels;
  std::string title;
  std::size_t columns = 4;  ///< panels per row, at least 1
  double scale_max = 1;     ///< the top of the colour scale (> 0); the bottom is 0

  double at(std::size_t h, std::size_t q, std::size_t k) const {
    return weights[(h * seq_q + q) * seq_kv + k];
  }
  /// Position of v on the colour scale, clamped to [0, 1]; NaN stays NaN.
  double fraction(double v) const {
    return std::isnan(v) ? v : std::clamp(v / scale_max, 0.0, 1.0);
  }
};

/// The renderers (attention_svg, write_attention_svg, render_attention, write_attention_png,
/// attention_text) draw an attention_map, as make_attention_map(w) returns it. One atomic
/// constraint on the exact type: the renderers are templates only so that anything else (the
/// weights tensor, the expression) fails with this rule's name instead of a conversion error.
template <class M>
concept argument_is_an_attention_map = bool(std::is_same_v<std::remove_cvref_t<M>, attention_map>);

/// make_attention_map(w) draws attention weights: an argus::tensor or tensor_view, as
/// evaluate(attention_weights(y), policy) returns them (not the expression itself). One atomic
/// constraint, so that the error shows the argument's type once, not TensorLike's two branches.
template <class W>
concept argument_is_a_tensor_or_view = bool(TensorLike<W>);

namespace detail {

/// v for an error message: "0.5", "-1", "nan", "inf".
inline std::string number_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

/// The weights of one batch item of w, (batch, head, seq_q, seq_kv), with the labels of o.
template <class T, class S>
attention_map attention_map_of(const tensor_view<const T, S>& w,
                               const attention_picture_options& o) {
  constexpr const char* op = "argus::make_attention_map";
  // Only 0 (the largest weight) and positive finite values mean anything: a negative or NaN
  // top would colour every cell from a division by it, and +inf would draw them all at 0.
  if (!(o.scale_max >= 0) || !std::isfinite(o.scale_max))
    throw std::invalid_argument(std::string(op) + ": scale_max is " + number_text(o.scale_max) +
                                "; it must be 0 (the largest weight) or positive and finite");
  check(o.batch_item < w.extent(0),
        std::string(op) + ": batch_item " + std::to_string(o.batch_item) +
            " is out of range: the weights hold " + std::to_string(w.extent(0)) + " batch items");
  attention_map m;
  m.heads = w.extent(1), m.seq_q = w.extent(2), m.seq_kv = w.extent(3);
  if (!o.query_tokens.empty())
    check_extents_agree(op, "the number of query_tokens", o.query_tokens.size(),
                        "seq_q of the weights", m.seq_q);
  if (!o.key_tokens.empty())
    check_extents_agree(op, "the number of key_tokens", o.key_tokens.size(),
                        "seq_kv of the weights", m.seq_kv);
  m.weights.reserve(m.heads * m.seq_q * m.seq_kv);
  double largest = 0;
  for (std::size_t h = 0; h < m.heads; ++h)
    for (std::size_t q = 0; q < m.seq_q; ++q)
      for (std::size_t k = 0; k < m.seq_kv; ++k) {
        const double v = static_cast<double>(w(o.batch_item, h, q, k));
        m.weights.push_back(v);
        if (std::isfinite(v)) largest = std::max(largest, v);
      }
  const auto indices = [](std::size_t n) {
    std::vector<std::string> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(std::to_string(i));
    return v;
  };
  m.query_labels = o.query_tokens.empty() ? indices(m.seq_q) : o.query_tokens;
  m.key_labels = !o.key_tokens.empty()                              ? o.key_tokens
                 : (!o.query_tokens.empty() && m.seq_kv == m.seq_q) ? o.query_tokens
                                                                    : indices(m.seq_kv);
  m.title = o.title;
  m.columns = o.columns == 0 ? std::max<std::size_t>(m.heads, 1) : o.columns;
  m.scale_max = o.scale_max > 0 ? o.scale_max : (largest > 0 ? largest : 1.0);
  return m;
}
}  // namespace detail

/// attention_weights(y) evaluated, (batch, head, seq_q, seq_kv): a tensor or a view of const or
/// mutable elements, as an attention_map. Anything else does not compile, the error naming the
/// rule (argument_is_a_tensor_or_view, axes_are_batch_head_seq_seq). Throws shape_error when
/// batch_item is out of range or a token list has the wrong length, and std::invalid_argument
/// when scale_max is negative, NaN or infinite.
template <class W>
attention_map make_attention_map(const W& w, const attention_picture_options& o = {}) {
  if constexpr (!argument_is_a_tensor_or_view<W>) {
    static_assert(argument_is_a_tensor_or_view<W>,
                  "argument_is_a_tensor_or_view: argus::make_attention_map(w) draws evaluated "
                  "weights, a tensor or view: argus::evaluate(argus::attention_weights(y), "
                  "policy), not the expression");
    return {};
  } else if constexpr (!axes_are_batch_head_seq_seq<typename W::shape_type>) {
    static_assert(axes_are_batch_head_seq_seq<typename W::shape_type>,
                  "axes_are_batch_head_seq_seq: argus::make_attention_map(w) draws attention "
                  "weights of axes (batch, head, seq_q, seq_kv), as attention_weights(y) "
                  "evaluated gives them");
    return {};
  } else {
    using T = std::remove_const_t<typename W::value_type>;
    return detail::attention_map_of(tensor_view<const T, typename W::shape_type>(w), o);
  }
}

/// A rejected expression's weights (its error is already reported): an empty map, silently.
/// An attention_map, not the rejected marker, so that the usual
/// `const attention_map m = make_attention_map(w);` adds no second error (an aggregate cannot
/// be given a converting constructor from detail::rejected without losing its designated
/// initialisers); such a program does not compile, so the empty map is never drawn.
inline attention_map make_attention_map(detail::rejected, const attention_picture_options& = {}) {
  return {};
}

/// An sRGB colour.
struct rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend constexpr bool operator==(const rgb&, const rgb&) = default;
};

/// The viridis colour map at t in [0, 1] (dark purple at 0, yellow at 1), interpolated
/// between 11 samples of matplotlib's table; NaN is mid grey.
inline rgb viridis(double t) {
  static constexpr std::array<std::array<double, 3>, 11> table = {{{68, 1, 84},
                                                                   {72, 36, 117},
                                                                   {65, 68, 135},
                                                                   {53, 95, 141},
                                                                   {42, 120, 142},
                                                                   {33, 145, 140},
                                                                   {34, 168, 132},
                                                                   {68, 191, 112},
                                                                   {122, 209, 81},
                                                                   {189, 223, 38},
                                                                   {253, 231, 37}}};
  if (std::isnan(t)) return {128, 128, 128};
  const double x = std::clamp(t, 0.0, 1.0) * 10;
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(x), 9);
  const double f = x - double(i);
  const auto mix = [&](int c) {
    return static_cast<std::uint8_t>(std::lround(table[i][c] * (1 - f) + table[i + 1][c] * f));
  };
  return {mix(0), mix(1), mix(2)};
}

/// "#rrggbb".
inline std::string hex(rgb c) {
  char s[8];
  std::snprintf(s, sizeof s, "#%02x%02x%02x", c.r, c.g, c.b);
  return s;
}

/// A scale value for a legend: 3 significant digits ("0.5", "0.125", "1").
inline std::string legend_number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

namespace detail {

/// Where everything goes, in pixels; text is 6 px per character and 10 px per line (the
/// PNG's bitmap font; the SVG uses a 10 px monospace font of about the same width). The
/// picture's size is computed in 64 bits and `fits` says whether it is one a renderer draws
/// (check_attention_picture throws otherwise); the int fields hold only when it does.
struct picture_layout {
  /// The largest picture: each side at most 2^16 pixels, and its rows of RGB (3 bytes a pixel
  /// and the PNG filter byte) at most INT_MAX bytes, the most stb's PNG encoder sizes (it
  /// computes (3 * width + 1) * height in int: a larger picture overflowed its buffer).
  static constexpr std::int64_t max_side = std::int64_t{1} << 16;
  static constexpr std::int64_t max_bytes = std::numeric_limits<int>::max();
  /// heads, seq_q and seq_kv above this make a picture beyond max_side whatever the labels; the
  /// layout's products stay in 64 bits below it.
  static constexpr std::size_t max_count = std::size_t{1} << 20;

  int char_w = 6, line_h = 10, margin = 12, gap = 18, title_h = 24, panel_title_h = 16;
  int legend_w = 14, legend_gap = 16;

  int cell = 0;                  // side of one weight's square
  int row_label_w = 0;           // left of each panel: the query labels
  int col_label_h = 0;           // below each panel: the key labels, written upwards
  int panel_w = 0, panel_h = 0;  // the heat map alone
  int block_w = 0, block_h = 0;  // one panel with its labels and its title
  std::size_t cols = 1, rows = 1;
  int legend_x = 0, legend_y = 0, legend_h = 0;
  int width = 0, height = 0;
  std::int64_t wide_width = 0, wide_height = 0;  // the picture's size, in 64 bits
  bool fits = false;                             // within max_side and max_bytes

  static std::size_t longest(const std::vector<std::string>& v) {
    std::size_t n = 0;
    for (const auto& s : v) n = std::max(n, s.size());
    return n;
  }

  explicit picture_layout(const attention_map& m) {
    if (m.heads > max_count || m.seq_q > max_count || m.seq_kv > max_count) {
      wide_width = wide_height = std::numeric_limits<std::int64_t>::max();
      return;  // fits stays false
    }
    using wide = std::int64_t;
    const std::size_t longest_side = std::max<std::size_t>({m.seq_q, m.seq_kv, 1});
    cell = static_cast<int>(std::clamp<std::size_t>(240 / longest_side, 4, 24));
    row_label_w = static_cast<int>(std::min<std::size_t>(longest(m.query_labels), 16)) * char_w + 6;
    col_label_h = static_cast<int>(std::min<std::size_t>(longest(m.key_labels), 16)) * char_w + 6;
    panel_w = cell * static_cast<int>(m.seq_kv);  // <= 24 * 2^20
    panel_h = cell * static_cast<int>(m.seq_q);
    block_w = row_label_w + panel_w;
    block_h = panel_title_h + panel_h + col_label_h;
    cols = std::max<std::size_t>(1, std::min(m.columns, std::max<std::size_t>(m.heads, 1)));
    rows = (m.heads + cols - 1) / cols;
    const wide grid_w = wide(cols) * block_w + wide(cols - 1) * gap;
    const wide grid_h = wide(rows) * block_h + wide(rows ? rows - 1 : 0) * gap;
    const wide wide_legend_x = margin + grid_w + legend_gap;
    legend_y = margin + title_h + panel_title_h;
    legend_h = std::max(panel_h, 60);
    const int legend_total_w = legend_w + 6 + 5 * char_w;  // bar, tick, "0.125"
    wide_width = std::max<wide>(
        wide_legend_x + legend_total_w + margin,
        2 * margin + static_cast<int>(std::min<std::size_t>(m.title.size(), 200)) * char_w * 2);
    wide_height =
        margin + title_h + std::max<wide>(grid_h, panel_title_h + legend_h + line_h) + margin;
    fits = wide_width <= max_side && wide_height <= max_side &&
           (3 * wide_width + 1) * wide_height <= max_bytes;
    if (fits) {
      legend_x = static_cast<int>(wide_legend_x);
      width = static_cast<int>(wide_width);
      height = static_cast<int>(wide_height);
    }
  }
  /// Top-left corner of head h's heat map.
  int panel_x(std::size_t h) const {
    return margin + static_cast<int>(h % cols) * (block_w + gap) + row_label_w;
  }
  int panel_y(std::size_t h) const {
    return margin + title_h + static_cast<int>(h / cols) * (block_h + gap) + panel_title_h;
  }
};

/// The longest prefix of s of at most n bytes that ends between two UTF-8 characters: a cut
/// inside a character's bytes would leave text that is not UTF-8 (an SVG no XML reader takes).
inline std::string_view utf8_prefix(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // a continuation byte
  return s.substr(0, n);
}

/// s cut to n bytes ("…" would not fit the bitmap font: a trailing '~' marks the cut), never
/// inside a UTF-8 character.
inline std::string clipped(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : std::string(utf8_prefix(s, n - 1)) + "~";
}

/// Throws unless m is a map the renderers can draw: shape_error when its sizes disagree
/// (weights, query_labels, key_labels against heads, seq_q, seq_kv), std::invalid_argument
/// when columns is 0 or scale_max is not positive and finite. make_attention_map's maps always
/// pass; an attention_map is an aggregate with public fields, so a hand-built or edited one
/// is checked here, once, at each renderer's entry, before anything reads past its vectors.
/// op names the renderer ("argus::attention_svg").
inline void check_attention_map(const char* op, const attention_map& m) {
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
  const std::string dims = "heads * seq_q * seq_kv (" + std::to_string(m.heads) + " * " +
                           std::to_string(m.seq_q) + " * " + std::to_string(m.seq_kv) + ")";
  const std::size_t rows = m.heads * m.seq_q;
  if ((m.heads != 0 && m.seq_q > most / m.heads) || (rows != 0 && m.seq_kv > most / rows))
    throw shape_error(std::string(op) + ": " + dims + " does not fit in std::size_t; the map " +
                      "holds " + std::to_string(m.weights.size()) + " weights");
  check_extents_agree(op, "the number of weights", m.weights.size(), dims.c_str(), rows * m.seq_kv);
  check_extents_agree(op, "the number of query_labels", m.query_labels.size(), "seq_q", m.seq_q);
  check_extents_agree(op, "the number of key_labels", m.key_labels.size(), "seq_kv", m.seq_kv);
  if (m.columns == 0)
    throw std::invalid_argument(std::string(op) + ": columns is 0; an attention_map draws at " +
                                "least 1 head panel per row (make_attention_map turns the " +
                                "option columns = 0 into the number of heads)");
  if (!(m.scale_max > 0) || !std::isfinite(m.scale_max))
    throw std::invalid_argument(std::string(op) + ": scale_max is " + number_text(m.scale_max) +
                                "; the top of an attention_map's colour scale must be positive " +
                                "and finite");
}

/// check_attention_map, and for the pictures (SVG, PNG, not text) std::invalid_argument naming
/// the picture's size when it exceeds picture_layout's bounds.
inline void check_attention_picture(const char* op, const attention_map& m) {
  check_attention_map(op, m);
  const picture_layout l(m);
  if (!l.fits) {
    const std::string size =
        l.wide_width == std::numeric_limits<std::int64_t>::max()
            ? "more than " + std::to_string(picture_layout::max_side) + " pixels on a side"
            : std::to_string(l.wide_width) + " x " + std::to_string(l.wide_height) + " pixels";
    throw std::invalid_argument(
        std::string(op) + ": the picture of (heads, seq_q, seq_kv) = (" + std::to_string(m.heads) +
        ", " + std::to_string(m.seq_q) + ", " + std::to_string(m.seq_kv) + ") weights would be " +
        size + "; a picture has at most " + std::to_string(picture_layout::max_side) +
        " pixels on a side and " + std::to_string(picture_layout::max_bytes) +
        " bytes of RGB rows: draw fewer heads or a shorter span of the sequence");
  }
}

/// Writes the n bytes at data to file, replacing it only once they are all written: a file (or
/// none yet) is replaced by a new one written beside it (file's name + ".partial-<k>") and
/// renamed over it at the end, with the old file's permissions, so that a failed write leaves
/// the old file as it was (a full disk used to leave a truncated picture in its place); a
/// symbolic link's target is replaced, not the link. Anything else, a device or a pipe, is
/// written to directly. Throws std::runtime_error naming op and the file when the file cannot
/// be opened (a directory cannot), a write fails, closing it does (a full disk often shows
/// only when the last buffer is flushed) or the rename does; the new file is removed then.
inline void write_file(const char* op, const std::filesystem::path& file, const char* data,
                       std::size_t n) {
  namespace fs = std::filesystem;
  const auto fail = [&](const char* what, const fs::path& path, const std::string& why) {
    throw std::runtime_error(std::string(op) + ": cannot " + what + " " + path.string() + why);
  };
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);  // follows symbolic links
  if (fs::is_directory(status)) fail("open", file, " (a directory)");
  const bool replace = !fs::exists(status) || fs::is_regular_file(status);
  fs::path target = file, partial = file;
  std::ofstream out;
  if (replace) {
    if (fs::exists(status)) {
      target = fs::canonical(file, ec);
      if (ec) target = file;
    }
    for (int k = 0; k < 100 && !out.is_open(); ++k) {
      partial = target;
      partial += ".partial-" + std::to_string(k);
      if (fs::exists(fs::symlink_status(partial, ec))) continue;  // another writer's, a crash's
      out.open(partial, std::ios::binary | std::ios::trunc);
      if (!out) fail("open", partial, " (to write " + file.string() + ")");
    }
    if (!out.is_open()) fail("open", file, " (no unused name for a temporary file beside it)");
  } else {
    out.open(file, std::ios::binary);
    if (!out) fail("open", file, "");
  }
  out.write(data, static_cast<std::streamsize>(n));
  out.close();
  if (!out) {
    if (replace) fs::remove(partial, ec);
    fail("write", file, " (" + std::to_string(n) + " bytes)");
  }
  if (!replace) return;
  if (fs::exists(status)) fs::permissions(partial, status.permissions(), ec);
  fs::rename(partial, target, ec);
  if (ec) {
    const std::string why = " (" + ec.message() + ")";
    fs::remove(partial, ec);
    fail("replace", file, why);
  }
}

}  // namespace detail

}  // namespace argus
