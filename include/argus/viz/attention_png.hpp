// argus/viz/attention_png.hpp -- viz layer (optional): an attention_map as a PNG picture.
//
//     argus::write_attention_png("attention.png", argus::make_attention_map(w, options));
//
// The same picture as attention_svg(): the layout comes from the same picture_layout, and
// text is drawn with a built-in 6x10 bitmap font (viz/bitmap_font.hpp), so labels, title and
// colour scale are all there. The font covers printable ASCII: other bytes (UTF-8 tokens)
// draw as '?'. render_attention() gives the RGB raster in memory; write_attention_png()
// encodes it with stb_image_write (Debian: libstb-dev; link -lstb, `pkg-config stb`).
#pragma once

#include <argus/viz/attention_map.hpp>
#include <argus/viz/bitmap_font.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stb_image_write.h>
#include <stdexcept>
#include <string>
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

/// m drawn as an RGB raster: the same picture as attention_svg(m).
inline rgb_image render_attention(const attention_map& m) {
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

/// Writes render_attention(m) as a PNG file; std::runtime_error naming the file on failure.
inline void write_attention_png(const std::filesystem::path& file, const attention_map& m) {
  const rgb_image img = render_attention(m);
  if (stbi_write_png(file.string().c_str(), img.width, img.height, 3, img.pixels.data(),
                     img.width * 3) == 0)
    throw std::runtime_error("argus::write_attention_png: cannot write " + file.string());
}

}  // namespace argus
