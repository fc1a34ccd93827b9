// argus/viz/attention_text.hpp -- viz layer (optional): an attention_map for the terminal.
//
//     std::cout << argus::attention_text(m);                             // style from the locale
//     std::cout << argus::attention_text(m, argus::text_style::ansi256);  // coloured cells
//
// Heads side by side (as many as fit in `width` columns), one row per query with its label,
// one cell per key, two characters wide so that the cells are about square:
//   unicode  shade blocks " ░▒▓█" (5 levels);
//   ansi256  a viridis-coloured background per cell (xterm 256-colour escapes, 24 levels);
//   ascii    " .:-=+*#%@" (10 levels), for terminals and logs without UTF-8.
// Keys are numbered above the cells (index mod 10) and listed with their tokens below, with
// the scale. NaN draws as "??". attention_text takes an attention_map only
// (argument_is_an_attention_map) and checks its fields first.
#pragma once

#include <argus/viz/attention_map.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace argus {

enum class text_style { unicode, ansi256, ascii };

/// unicode when the locale (LC_ALL, else LC_CTYPE, else LANG) says UTF-8, else ascii.
inline text_style default_text_style() {
  for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      std::string s(v);
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return char(std::tolower(c)); });
      return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos
                 ? text_style::unicode
                 : text_style::ascii;
    }
  }
  return text_style::ascii;
}

namespace detail {

/// The xterm 256-colour index nearest to c in the 6x6x6 colour cube.
inline int xterm_cube_index(rgb c) {
  static constexpr int levels[6] = {0, 95, 135, 175, 215, 255};
  const auto nearest = [](int v) {
    int best = 0;
    for (int i = 1; i < 6; ++i)
      if (std::abs(levels[i] - v) < std::abs(levels[best] - v)) best = i;
    return best;
  };
  return 16 + 36 * nearest(c.r) + 6 * nearest(c.g) + nearest(c.b);
}

/// The two-character cell for fraction f (in [0, 1], or NaN).
inline std::string text_cell(double f, text_style style) {
  if (std::isnan(f)) return "??";
  if (style == text_style::ascii) {
    static constexpr std::string_view ramp = " .:-=+*#%@";
    const char c =
        ramp[std::min<std::size_t>(static_cast<std::size_t>(f * ramp.size()), ramp.size() - 1)];
    return std::string(2, c);
  }
  if (style == text_style::unicode) {
    static constexpr const char* shades[5] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
    const std::string s = shades[std::min<std::size_t>(static_cast<std::size_t>(f * 5), 4)];
    return s + s;
  }
  const double level = std::floor(std::min(f, 1.0) * 23.999) / 23.0;  // 24 distinct colours
  return "\x1b[48;5;" + std::to_string(xterm_cube_index(viridis(level))) + "m  \x1b[0m";
}

// s in n bytes: cut (never inside a UTF-8 character, utf8_prefix) or filled with spaces.
inline std::string padded(const std::string& s, std::size_t n) {
  const std::string_view cut = utf8_prefix(s, n);
  return std::string(cut) + std::string(n - cut.size(), ' ');
}
inline std::string right_aligned(const std::string& s, std::size_t n) {
  const std::string_view cut = utf8_prefix(s, n);
  return std::string(n - cut.size(), ' ') + std::string(cut);
}

/// m, a map already checked, as text.
inline std::string text_picture(const attention_map& m, text_style style, std::size_t width) {
  std::size_t label_w = 0;
  for (const auto& s : m.query_labels)
    label_w = std::max(label_w, std::min<std::size_t>(s.size(), 10));
  // A panel is as wide as its cells or its title ("head 11"), whichever is wider: a map of
  // one or two keys cut the title to "head " (the cells' lines are then filled with spaces).
  const std::size_t title_w = 5 + std::to_string(m.heads == 0 ? 0 : m.heads - 1).size();
  const std::size_t cells_w = 2 * m.seq_kv, fill = cells_w < title_w ? title_w - cells_w : 0;
  const std::size_t panel_w = label_w + 1 + cells_w + fill, gap = 3;
  const std::size_t per_line =
      std::max<std::size_t>(1, std::min(m.heads, (width + gap) / (panel_w + gap)));
  std::string out = m.title + "\n";
  for (std::size_t first = 0; first < m.heads; first += per_line) {
    const std::size_t last = std::min(m.heads, first + per_line);
    std::string line;
    for (std::size_t h = first; h < last; ++h)
      line += detail::padded(std::string(label_w + 1, ' ') + "head " + std::to_string(h), panel_w) +
              (h + 1 < last ? std::string(gap, ' ') : "");
    out += line + "\n";
    line.clear();
    for (std::size_t h = first; h < last; ++h) {
      line += std::string(label_w + 1, ' ');
      for (std::size_t k = 0; k < m.seq_kv; ++k) line += std::to_string(k % 10) + " ";
      line += std::string(fill, ' ') + (h + 1 < last ? std::string(gap, ' ') : "");
    }
    out += line + "\n";
    for (std::size_t q = 0; q < m.seq_q; ++q) {
      line.clear();
      for (std::size_t h = first; h < last; ++h) {
        line += detail::right_aligned(m.query_labels[q], label_w) + " ";
        for (std::size_t k = 0; k < m.seq_kv; ++k)
          line += detail::text_cell(m.fraction(m.at(h, q, k)), style);
        line += std::string(fill, ' ') + (h + 1 < last ? std::string(gap, ' ') : "");
      }
      out += line + "\n";
    }
    out += "\n";
  }
  out += "keys:";
  for (std::size_t k = 0; k < m.seq_kv; ++k) out += " " + std::to_string(k) + "=" + m.key_labels[k];
  out += "\nscale: ";
  for (double f : {0.0, 0.25, 0.5, 0.75, 1.0})
    out +=
        detail::text_cell(f, style) + " " + legend_number(f * m.scale_max) + (f < 1.0 ? "  " : "");
  return out + "\n";
}

}  // namespace detail

/// m, an attention_map, as text; width is the widest line (in columns) to fill with panels side
/// by side. Anything else does not compile, the error naming argument_is_an_attention_map.
/// Throws shape_error or std::invalid_argument, naming the field, when m's fields disagree.
template <class M>
std::string attention_text(const M& m, text_style style = default_text_style(),
                           std::size_t width = 100) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::attention_text(m) draws an "
                  "attention_map: pass argus::make_attention_map(w)");
    return {};
  } else {
    detail::check_attention_map("argus::attention_text", m);
    return detail::text_picture(m, style, width);
  }
}

/// A rejected map (its error is already reported): nothing, silently.
inline std::string attention_text(detail::rejected, text_style = text_style::ascii,
                                  std::size_t = 100) {
  return {};
}

}  // namespace argus
