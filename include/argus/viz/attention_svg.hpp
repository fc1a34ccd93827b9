// argus/viz/attention_svg.hpp -- viz layer (optional): an attention_map as an SVG picture.
//
//     argus::write_attention_svg("attention.svg", argus::make_attention_map(w, options));
//
// One heat-map panel per head ("head 0", "head 1", ...), query tokens down the left of each
// panel, key tokens under it (written upwards), the title on top and a colour scale on the
// right from 0 to scale_max. Each cell carries a <title> tooltip: "query -> key: weight".
// Hand-written SVG 1.1: well-formed XML, every label escaped; no dependency. Both functions
// take an attention_map only (argument_is_an_attention_map) and check its fields first.
#pragma once

#include <argus/viz/attention_map.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace argus {

namespace detail {

/// The length of the UTF-8 character at the start of s (1 to 4 bytes), or 0 when s does not
/// start with one: a stray continuation byte, a lead byte without its continuation bytes, an
/// overlong form, a surrogate (U+D800 to U+DFFF) or a value above U+10FFFF. Sets code_point.
inline std::size_t utf8_character(std::string_view s, char32_t& code_point) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  std::size_t n = 0;
  char32_t c = 0, least = 0;
  if (lead < 0x80)
    n = 1, c = lead;
  else if ((lead & 0xE0) == 0xC0)
    n = 2, c = lead & 0x1F, least = 0x80;
  else if ((lead & 0xF0) == 0xE0)
    n = 3, c = lead & 0x0F, least = 0x800;
  else if ((lead & 0xF8) == 0xF0)
    n = 4, c = lead & 0x07, least = 0x10000;
  else
    return 0;
  if (s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(i) & 0x3F);
  }
  if (c < least || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  code_point = c;
  return n;
}

/// s with the five XML special characters escaped, control characters (not allowed in XML
/// 1.0) replaced by '?', and what is not UTF-8, or a character XML 1.0 does not allow (U+FFFE,
/// U+FFFF), by U+FFFD: an SVG is UTF-8 XML, and one bad byte in a label (a byte-level BPE
/// token, a label cut inside a character) made the whole file unreadable to XML readers.
inline std::string xml_escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    char32_t c = 0;
    std::size_t n = utf8_character(s, c);
    if (n == 0 || c == 0xFFFE || c == 0xFFFF) {
      out += "\xEF\xBF\xBD";  // U+FFFD, the replacement character
      s.remove_prefix(n == 0 ? 1 : n);
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 && c != '\t')
          out += '?';
        else
          out.append(s.data(), n);
    }
    s.remove_prefix(n);
  }
  return out;
}

inline std::string svg_number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4g", v);
  return s;
}

/// The SVG document of m, a map already checked.
inline std::string svg_document(const attention_map& m) {
  using detail::svg_number;
  using detail::xml_escaped;
  const detail::picture_layout l(m);
  const auto n = [](int v) { return std::to_string(v); };
  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + n(l.width) +
       "\" height=\"" + n(l.height) + "\" viewBox=\"0 0 " + n(l.width) + " " + n(l.height) +
       "\">\n";
  s += "<title>" + xml_escaped(m.title) + "</title>\n";
  s += "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int i = 0; i <= 10; ++i)
    s += "<stop offset=\"" + svg_number(i / 10.0) + "\" stop-color=\"" + hex(viridis(i / 10.0)) +
         "\"/>";
  s += "</linearGradient></defs>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += "<g font-family=\"DejaVu Sans Mono, monospace\" font-size=\"10\" fill=\"#000000\">\n";
  s += "<text x=\"" + n(l.margin) + "\" y=\"" + n(l.margin + 16) +
       "\" font-size=\"18\" font-weight=\"bold\">" + xml_escaped(m.title) + "</text>\n";

  for (std::size_t h = 0; h < m.heads; ++h) {
    const int x0 = l.panel_x(h), y0 = l.panel_y(h);
    s += "<g class=\"head\" id=\"head" + std::to_string(h) + "\">\n";
    s += "<text x=\"" + n(x0) + "\" y=\"" + n(y0 - 5) +
         "\" font-size=\"12\" font-weight=\"bold\">head " + std::to_string(h) + "</text>\n";
    for (std::size_t q = 0; q < m.seq_q; ++q)
      for (std::size_t k = 0; k < m.seq_kv; ++k) {
        const double v = m.at(h, q, k);
        s += "<rect x=\"" + n(x0 + int(k) * l.cell) + "\" y=\"" + n(y0 + int(q) * l.cell) +
             "\" width=\"" + n(l.cell) + "\" height=\"" + n(l.cell) + "\" fill=\"" +
             hex(viridis(m.fraction(v))) + "\"><title>" + xml_escaped(m.query_labels[q]) +
             " -&gt; " + xml_escaped(m.key_labels[k]) + ": " + svg_number(v) + "</title></rect>\n";
      }
    s += "<rect x=\"" + n(x0) + "\" y=\"" + n(y0) + "\" width=\"" + n(l.panel_w) + "\" height=\"" +
         n(l.panel_h) + "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n";
    for (std::size_t q = 0; q < m.seq_q; ++q)
      s += "<text x=\"" + n(x0 - 4) + "\" y=\"" + n(y0 + int(q) * l.cell + l.cell / 2 + 3) +
           "\" text-anchor=\"end\">" + xml_escaped(detail::clipped(m.query_labels[q], 16)) +
           "</text>\n";
    for (std::size_t k = 0; k < m.seq_kv; ++k) {
      const int x = x0 + int(k) * l.cell + l.cell / 2 + 3, y = y0 + l.panel_h + 4;
      s += "<text x=\"" + n(x) + "\" y=\"" + n(y) +
           "\" text-anchor=\"end\" transform=\"rotate(-90 " + n(x) + " " + n(y) + ")\">" +
           xml_escaped(detail::clipped(m.key_labels[k], 16)) + "</text>\n";
    }
    s += "</g>\n";
  }

  // The colour scale: a bar from 0 (bottom) to scale_max (top), ticks at 0, 1/2 and 1.
  s += "<g class=\"legend\">\n";
  s += "<rect x=\"" + n(l.legend_x) + "\" y=\"" + n(l.legend_y) + "\" width=\"" + n(l.legend_w) +
       "\" height=\"" + n(l.legend_h) +
       "\" fill=\"url(#scale)\" stroke=\"#000000\" stroke-width=\"0.5\"/>\n";
  for (int i = 0; i <= 2; ++i) {
    const int y = l.legend_y + l.legend_h - i * l.legend_h / 2;
    s += "<line x1=\"" + n(l.legend_x + l.legend_w) + "\" y1=\"" + n(y) + "\" x2=\"" +
         n(l.legend_x + l.legend_w + 4) + "\" y2=\"" + n(y) + "\" stroke=\"#000000\"/>";
    s += "<text x=\"" + n(l.legend_x + l.legend_w + 6) + "\" y=\"" + n(y + 3) + "\">" +
         legend_number(m.scale_max * i / 2) + "</text>\n";
  }
  s += "</g>\n</g>\n</svg>\n";
  return s;
}

}  // namespace detail

/// The SVG document of m, an attention_map (anything else does not compile, the error naming
/// argument_is_an_attention_map). Throws shape_error or std::invalid_argument, naming the
/// field, when m's fields disagree, and std::invalid_argument when the picture would be too
/// large (detail::check_attention_picture).
template <class M>
std::string attention_svg(const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::attention_svg(m) draws an attention_map: "
                  "pass argus::make_attention_map(w)");
    return {};
  } else {
    detail::check_attention_picture("argus::attention_svg", m);
    return detail::svg_document(m);
  }
}

/// A rejected map (make_attention_map's argument was rejected, and that error is reported):
/// nothing, silently, so that one misuse gives one error.
inline std::string attention_svg(detail::rejected) { return {}; }

/// Writes attention_svg(m) to file, replacing it only once the new one is whole
/// (detail::write_file). Throws std::runtime_error naming the file when it cannot be opened,
/// written or closed, and what attention_svg(m) throws (before opening the file).
template <class M>
void write_attention_svg(const std::filesystem::path& file, const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::write_attention_svg(path, m) draws an "
                  "attention_map: pass argus::make_attention_map(w)");
  } else {
    detail::check_attention_picture("argus::write_attention_svg", m);
    const std::string doc = detail::svg_document(m);
    detail::write_file("argus::write_attention_svg", file, doc.data(), doc.size());
  }
}

/// A rejected map (its error is already reported): nothing, silently.
inline void write_attention_svg(const std::filesystem::path&, detail::rejected) {}

}  // namespace argus
