// argus/viz/attention_png.hpp -- viz layer (optional): an attention_map as a PNG picture.
//
//     argus::write_attention_png("attention.png", argus::make_attention_map(w, options));
//
// The same picture as attention_svg(): the layout comes from the same picture_layout, and
// text is drawn with a built-in 6x10 bitmap font (viz/bitmap_font.hpp), so labels, title and
// colour scale are all there. The font covers printable ASCII: other bytes (UTF-8 tokens)
// draw as '?'. render_attention() gives the RGB raster in memory; write_attention_png()
// encodes it with stb_image_write (Debian: libstb-dev; link -lstb, `pkg-config stb`) and
// writes it, checking every write and the close. Both take an attention_map only
// (argument_is_an_attention_map) and check its fields first.
#pragma once

#include <argus/viz/attention_map.hpp>
#include <argus/viz/bitmap_font.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stb_image_write.h>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace argus {

/// An 8-bit RGB picture, row-major from the top-left corner, 3 bytes per pixel.
struct rgb_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;

  rgb_image(int w, int h, rgb background)
      : width(w), height(h), pixels(std::size_t(w) * std::size_t(h) * 3) {
    for (std::size_t i = 0; i < pixels.size(); i += 3)
      pixels[i] = background.r, pixels[i + 1] = background.g, pixels[i + 2] = background.b;
  }
  rgb pixel(int x, int y) const {
    const std::size_t i = (std::size_t(y) * std::size_t(width) + std::size_t(x)) * 3;
    return {pixels[i], pixels[i + 1], pixels[i + 2]};
  }
  /// Sets (x, y) to c; points outside the picture are ignored.
  void set(int x, int y, rgb c) {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const std::size_t i = (std::size_t(y) * std::size_t(width) + std::size_t(x)) * 3;
    pixels[i] = c.r;
    pixels[i + 1] = c.g;
    pixels[i + 2] = c.b;
  }
  void fill_rect(int x, int y, int w, int h, rgb c) {
    for (int j = y; j < y + h; ++j)
      for (int i = x; i < x + w; ++i) set(i, j, c);
  }
  void frame(int x, int y, int w, int h, rgb c) {
    for (int i = x; i < x + w; ++i) set(i, y, c), set(i, y + h - 1, c);
    for (int j = y; j < y + h; ++j) set(x, j, c), set(x + w - 1, j, c);
  }
  /// Text with its top-left corner at (x, y), scaled up `scale` times.
  void text(int x, int y, const std::string& s, rgb c, int scale = 1) {
    for (std::size_t n = 0; n < s.size(); ++n)
      for (int gy = 0; gy < detail::glyph_height; ++gy)
        for (int gx = 0; gx < detail::glyph_width; ++gx)
          if (detail::glyph_pixel(s[n], gx, gy))
            fill_rect(x + (int(n) * detail::glyph_width + gx) * scale, y + gy * scale, scale, scale,
                      c);
  }
  /// Text read upwards (rotated a quarter turn anticlockwise), ending at (x, y_bottom - ...):
  /// its first character sits at the bottom, its glyph tops face left, toward x.
  void text_up(int x, int y_bottom, const std::string& s, rgb c) {
    for (std::size_t n = 0; n < s.size(); ++n)
      for (int gy = 0; gy < detail::glyph_height; ++gy)
        for (int gx = 0; gx < detail::glyph_width; ++gx)
          if (detail::glyph_pixel(s[n], gx, gy))
            set(x + gy, y_bottom - int(n) * detail::glyph_width - gx, c);
  }
};

namespace detail {

/// m, a map already checked, drawn as an RGB raster.
inline rgb_image raster(const attention_map& m) {
  const detail::picture_layout l(m);
  const rgb black{0, 0, 0}, white{255, 255, 255};
  rgb_image img(l.width, l.height, white);
  img.text(l.margin, l.margin, detail::clipped(m.title, 200), black, 2);
  for (std::size_t h = 0; h < m.heads; ++h) {
    const int x0 = l.panel_x(h), y0 = l.panel_y(h);
    img.text(x0, y0 - l.panel_title_h + 2, "head " + std::to_string(h), black);
    for (std::size_t q = 0; q < m.seq_q; ++q)
      for (std::size_t k = 0; k < m.seq_kv; ++k)
        img.fill_rect(x0 + int(k) * l.cell, y0 + int(q) * l.cell, l.cell, l.cell,
                      viridis(m.fraction(m.at(h, q, k))));
    img.frame(x0 - 1, y0 - 1, l.panel_w + 2, l.panel_h + 2, black);
    for (std::size_t q = 0; q < m.seq_q; ++q) {
      const std::string label = detail::clipped(m.query_labels[q], 16);
      img.text(x0 - 4 - int(label.size()) * l.char_w, y0 + int(q) * l.cell + (l.cell - 10) / 2 + 1,
               label, black);
    }
    // Key labels read upwards from just below the panel, like the SVG's rotate(-90).
    for (std::size_t k = 0; k < m.seq_kv; ++k) {
      const std::string label = detail::clipped(m.key_labels[k], 16);
      const int x = x0 + int(k) * l.cell + (l.cell - 10) / 2 + 1;
      img.text_up(x, y0 + l.panel_h + 3 + int(label.size()) * l.char_w, label, black);
    }
  }
  for (int y = 0; y < l.legend_h; ++y) {
    const rgb c = viridis(1.0 - double(y) / double(l.legend_h - 1));
    img.fill_rect(l.legend_x, l.legend_y + y, l.legend_w, 1, c);
  }
  img.frame(l.legend_x, l.legend_y, l.legend_w, l.legend_h, black);
  for (int i = 0; i <= 2; ++i) {
    const int y = l.legend_y + l.legend_h - i * l.legend_h / 2;
    img.fill_rect(l.legend_x + l.legend_w, y, 4, 1, black);
    img.text(l.legend_x + l.legend_w + 6, y - 6, legend_number(m.scale_max * i / 2), black);
  }
  return img;
}

/// img encoded as PNG in memory. stbi_write_png would write the file itself, but it checks
/// neither its fwrite calls nor its fclose, so a full disk went unreported; encoding to memory
/// lets write_file check every step. stb calls `append` from C: it must not throw through it.
inline std::vector<char> png_bytes(const char* op, const rgb_image& img) {
  struct sink {
    std::vector<char> bytes;
    bool failed = false;
  } out;
  const auto append = [](void* context, void* data, int size) {
    auto& to = *static_cast<sink*>(context);
    try {
      const char* p = static_cast<const char*>(data);
      to.bytes.insert(to.bytes.end(), p, p + size);
    } catch (...) {
      to.failed = true;
    }
  };
  if (stbi_write_png_to_func(append, &out, img.width, img.height, 3, img.pixels.data(),
                             img.width * 3) == 0 ||
      out.failed)
    throw std::runtime_error(std::string(op) + ": cannot encode a " + std::to_string(img.width) +
                             "x" + std::to_string(img.height) + " picture as PNG");
  return std::move(out.bytes);
}

}  // namespace detail

/// m, an attention_map, drawn as an RGB raster: the same picture as attention_svg(m). Anything
/// else does not compile, the error naming argument_is_an_attention_map. Throws shape_error or
/// std::invalid_argument, naming the field, when m's fields disagree, and std::invalid_argument
/// when the picture would be too large (detail::check_attention_picture).
template <class M>
rgb_image render_attention(const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::render_attention(m) draws an "
                  "attention_map: pass argus::make_attention_map(w)");
    return rgb_image(0, 0, rgb{});
  } else {
    detail::check_attention_picture("argus::render_attention", m);
    return detail::raster(m);
  }
}

/// A rejected map (its error is already reported): an empty picture, silently.
inline rgb_image render_attention(detail::rejected) { return rgb_image(0, 0, rgb{}); }

/// Writes render_attention(m) as a PNG file, replacing file only once the new one is whole
/// (detail::write_file). Throws std::runtime_error naming the file when it cannot be opened,
/// written or closed, and what render_attention(m) throws (before opening the file).
template <class M>
void write_attention_png(const std::filesystem::path& file, const M& m) {
  if constexpr (!argument_is_an_attention_map<M>) {
    static_assert(argument_is_an_attention_map<M>,
                  "argument_is_an_attention_map: argus::write_attention_png(path, m) draws an "
                  "attention_map: pass argus::make_attention_map(w)");
  } else {
    constexpr const char* op = "argus::write_attention_png";
    detail::check_attention_picture(op, m);
    const std::vector<char> png = detail::png_bytes(op, detail::raster(m));
    detail::write_file(op, file, png.data(), png.size());
  }
}

/// A rejected map (its error is already reported): nothing, silently.
inline void write_attention_png(const std::filesystem::path&, detail::rejected) {}

}  // namespace argus
