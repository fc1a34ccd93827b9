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

/// s with the five XML special characters escaped, and control characters (not allowed in
/// XML 1.0) replaced by '?'.
inline std::string xml_escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
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
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? '?' : c;
    }
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
/// field, when m's fields disagree (detail::check_attention_map).
template <class M>
std::string attention_svg(const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::attention_svg(m) draws an attention_map: "
                  "pass argus::make_attention_map(w)");
    return {};
  } else {
    detail::check_attention_map("argus::attention_svg", m);
    return detail::svg_document(m);
  }
}

/// A rejected map (make_attention_map's argument was rejected, and that error is reported):
/// nothing, silently, so that one misuse gives one error.
inline std::string attention_svg(detail::rejected) { return {}; }

/// Writes attention_svg(m) to file. Throws std::runtime_error naming the file when it cannot
/// be opened, written or closed, and what attention_svg(m) throws (before opening the file).
template <class M>
void write_attention_svg(const std::filesystem::path& file, const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::write_attention_svg(path, m) draws an "
                  "attention_map: pass argus::make_attention_map(w)");
  } else {
    detail::check_attention_map("argus::write_attention_svg", m);
    const std::string doc = detail::svg_document(m);
    detail::write_file("argus::write_attention_svg", file, doc.data(), doc.size());
  }
}

/// A rejected map (its error is already reported): nothing, silently.
inline void write_attention_svg(const std::filesystem::path&, detail::rejected) {}

}  // namespace argus
