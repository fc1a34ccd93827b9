// argus/viz/: attention weights to an attention_map (values, labels, scale, misuse), and
// the three renderings of it: SVG (well-formed XML, escaped labels, one cell per weight in
// its colour), PNG (every cell's pixels in its colour, written and decoded back by stb) and
// text (each style's cells and scale); the checks at each renderer's entry (a hand-built map
// whose fields disagree, an option out of range, a picture too large to draw) and the
// writers' reports of a failed write, which leaves the file it would replace as it was; labels
// that are not UTF-8, or cut inside a character, still give UTF-8 text. Label memory: the
// raster, stb's PNG buffer and the writes run under ASan+UBSan too.
// labels: memory
#include "support/messages.hpp"
#include "support/tensor_files.hpp"
#include <argus/argus.hpp>
#include <argus/viz/attention_map.hpp>
#include <argus/viz/attention_png.hpp>
#include <argus/viz/attention_svg.hpp>
#include <argus/viz/attention_text.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <stb_image.h>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <type_traits>
#include <vector>

namespace {

using weights_t =
    argus::tensor<float, argus::shape<argus::batch<>, argus::head<2>, argus::seq<>, argus::seq<>>>;

/// batch 2, 2 heads, 3 queries, 4 keys; item b, head h, row q, key k holds
/// (b + 1) * (1 + h * 12 + q * 4 + k) / 100.
weights_t sample_weights() {
  weights_t w(2, 3, 4);  // (B,H,SEQ_Q,SEQ_KV)
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t q = 0; q < 3; ++q)
        for (std::size_t k = 0; k < 4; ++k)
          w(b, h, q, k) = float(b + 1) * float(1 + h * 12 + q * 4 + k) / 100;
  return w;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

/// A small well-formedness check: every tag closed in order, attribute values quoted, '&'
/// only in the five predefined entities, no '<' in text. Returns "" or the first problem.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '&') {
      std::size_t end = s.find(';', i);
      const std::string ent = end == std::string::npos ? "" : s.substr(i, end - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
        return "bad entity at " + std::to_string(i);
      i = end + 1;
      continue;
    }
    if (s[i] != '<') {
      if (s[i] == '>') return "'>' in text at " + std::to_string(i);
      ++i;
      continue;
    }
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?")) continue;
    if (count(tag, "\"") % 2 != 0) return "unbalanced quotes in <" + tag + ">";
    if (tag.find('<') != std::string::npos) return "'<' inside <" + tag + ">";
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1))
        return "</" + tag.substr(1) + "> closes nothing open";
      open.pop_back();
    } else if (!tag.ends_with("/")) {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

/// Whether s is UTF-8 (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF), by
/// its byte patterns.
bool is_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = [&](std::size_t j) { return j < s.size() ? (unsigned char)s[j] : 0u; };
    const unsigned c = b(i);
    const auto cont = [&](std::size_t j) { return (b(j) & 0xC0) == 0x80; };
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) {
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2) &&
               !(c == 0xE0 && b(i + 1) < 0xA0) && !(c == 0xED && b(i + 1) >= 0xA0)) {
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3) &&
               !(c == 0xF0 && b(i + 1) < 0x90) && !(c == 0xF4 && b(i + 1) >= 0x90)) {
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A map of `heads` heads of seq_q x seq_kv weights 0.5, labelled 0, 1, 2, ...
argus::attention_map uniform_map(std::size_t heads, std::size_t seq_q, std::size_t seq_kv,
                                 std::size_t columns) {
  argus::attention_map m;
  m.heads = heads, m.seq_q = seq_q, m.seq_kv = seq_kv, m.columns = columns;
  m.weights.assign(heads * seq_q * seq_kv, 0.5);
  for (std::size_t q = 0; q < seq_q; ++q) m.query_labels.push_back(std::to_string(q));
  for (std::size_t k = 0; k < seq_kv; ++k) m.key_labels.push_back(std::to_string(k));
  m.title = "uniform";
  m.scale_max = 1;
  return m;
}

using argus::test::throws_naming;

// The renderers take an attention_map and nothing else; a rejected map (its error already
// reported) is accepted silently, so that one misuse gives one compile error.
static_assert(argus::argument_is_an_attention_map<argus::attention_map>);
static_assert(argus::argument_is_an_attention_map<const argus::attention_map&>);
static_assert(!argus::argument_is_an_attention_map<weights_t>);  // the weights themselves
static_assert(!argus::argument_is_an_attention_map<argus::detail::rejected>);
static_assert(std::is_same_v<decltype(argus::make_attention_map(argus::detail::rejected{})),
                             argus::attention_map>);
static_assert(
    std::is_same_v<decltype(argus::attention_svg(argus::detail::rejected{})), std::string>);
static_assert(
    std::is_same_v<decltype(argus::attention_text(argus::detail::rejected{})), std::string>);
static_assert(
    std::is_same_v<decltype(argus::render_attention(argus::detail::rejected{})), argus::rgb_image>);
static_assert(std::is_void_v<decltype(argus::write_attention_svg("a", argus::detail::rejected{}))>);
static_assert(std::is_void_v<decltype(argus::write_attention_png("a", argus::detail::rejected{}))>);

}  // namespace

BOOST_AUTO_TEST_CASE(attention_map_takes_one_batch_item_its_labels_and_scale) {
  const weights_t w = sample_weights();
  const argus::attention_map m = argus::make_attention_map(
      w, {.title = "t", .query_tokens = {"a", "b", "c"}, .batch_item = 1});
  BOOST_TEST(m.heads == 2u);
  BOOST_TEST(m.seq_q == 3u);
  BOOST_TEST(m.seq_kv == 4u);
  BOOST_TEST(m.at(1, 2, 3) == double(w(1, 1, 2, 3)));
  BOOST_TEST(m.at(0, 1, 0) == double(w(1, 0, 1, 0)));
  BOOST_TEST(m.scale_max == double(w(1, 1, 2, 3)));  // the largest weight of item 1
  BOOST_TEST((m.query_labels == std::vector<std::string>{"a", "b", "c"}));
  BOOST_TEST((m.key_labels == std::vector<std::string>{"0", "1", "2", "3"}));  // seq_kv != seq_q
  BOOST_TEST(argus::make_attention_map(w, {.scale_max = 2}).fraction(1.0) == 0.5);
  weights_t copy = w;
  BOOST_TEST((argus::make_attention_map(copy.view(), {.batch_item = 1}).weights == m.weights));

  BOOST_CHECK_EXCEPTION((void)argus::make_attention_map(w, {.batch_item = 2}), argus::shape_error,
                        [](const argus::shape_error& e) {
                          return std::string(e.what()).find("batch_item 2 is out of range") !=
                                 std::string::npos;
                        });
  BOOST_CHECK_EXCEPTION(
      (void)argus::make_attention_map(w, {.query_tokens = {"a", "b"}}), argus::shape_error,
      [](const argus::shape_error& e) {
        return std::string(e.what()).find(
                   "the number of query_tokens is 2 but seq_q of the weights is 3") !=
               std::string::npos;
      });
  BOOST_CHECK_THROW((void)argus::make_attention_map(w, {.key_tokens = {"a"}}), argus::shape_error);
}

BOOST_AUTO_TEST_CASE(attention_weights_of_a_module_make_a_map) {
  argus::multi_head_attention<8, 2> mha;  // zero weights: every query attends every key equally
  argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<8>>> x(
      1, 5);  // (B,SEQ,D_MODEL)
  const auto y = mha.forward(x, argus::causal);
  const argus::attention_map m =
      argus::make_attention_map(argus::evaluate(argus::attention_weights(y), argus::unfused),
                                {.query_tokens = {"w", "x", "y", "z", "!"}});
  BOOST_TEST((m.key_labels == m.query_labels));  // self-attention: the keys are the queries
  BOOST_TEST(m.at(1, 3, 2) == 0.25, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(m.at(1, 3, 4) == 0.0);
  BOOST_TEST(m.scale_max == 1.0, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(svg_is_well_formed_escapes_labels_and_colours_every_cell) {
  const weights_t w = sample_weights();
  const argus::attention_map m =
      argus::make_attention_map(w, {.title = "a <b> & \"c\"",
                                    .query_tokens = {"<q>", "it's", "x&y"},
                                    .key_tokens = {"k0", "k1", "k2", "k3"}});
  const std::string svg = argus::attention_svg(m);
  BOOST_TEST(xml_problem(svg) == "");
  BOOST_TEST(svg.starts_with("<?xml version=\"1.0\""));
  BOOST_TEST(count(svg, "<title>") == 1 + 2 * 3 * 4);  // the document's, and one per cell
  BOOST_TEST(count(svg, "a &lt;b&gt; &amp; &quot;c&quot;") == 2);
  BOOST_TEST(svg.find("&lt;q&gt;") != std::string::npos);
  BOOST_TEST(svg.find("it&apos;s") != std::string::npos);
  BOOST_TEST(svg.find("x&amp;y") != std::string::npos);
  BOOST_TEST(svg.find("<q>") == std::string::npos);
  BOOST_TEST(count(svg, ">head ") == 2);
  // The largest weight is the top of the scale, the smallest near the bottom.
  BOOST_TEST(
      count(svg, "fill=\"" + argus::hex(argus::viridis(1.0)) + "\"><title>x&amp;y -&gt; k3") == 1);
  BOOST_TEST(count(svg, "fill=\"" + argus::hex(argus::viridis(m.fraction(m.at(0, 0, 0)))) +
                            "\"><title>&lt;q&gt; -&gt; k0") == 1);
  BOOST_TEST(svg.find(">" + argus::legend_number(m.scale_max) + "</text>") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(png_raster_has_each_cell_in_its_colour_and_round_trips_through_stb) {
  const weights_t w = sample_weights();
  const argus::attention_map m = argus::make_attention_map(w, {.title = "png", .columns = 1});
  const argus::rgb_image img = argus::render_attention(m);
  const argus::detail::picture_layout l(m);
  BOOST_TEST(img.width == l.width);
  BOOST_TEST(img.height == l.height);
  BOOST_TEST(l.panel_y(1) > l.panel_y(0));  // one panel per row
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t q = 0; q < 3; ++q)
      for (std::size_t k = 0; k < 4; ++k) {
        const argus::rgb want = argus::viridis(m.fraction(m.at(h, q, k)));
        const int x = l.panel_x(h) + int(k) * l.cell + l.cell / 2,
                  y = l.panel_y(h) + int(q) * l.cell + l.cell / 2;
        BOOST_TEST((img.pixel(x, y) == want), "head " << h << " cell " << q << "," << k);
      }
  // Text was drawn: the title's area and the legend labels hold black pixels.
  int black = 0;
  for (int y = l.margin; y < l.margin + 20; ++y)
    for (int x = l.margin; x < l.margin + 36; ++x) black += img.pixel(x, y) == argus::rgb{0, 0, 0};
  BOOST_TEST(black > 20);
  BOOST_TEST(
      (img.pixel(l.legend_x + 5, l.legend_y + 1) == argus::viridis(1.0 - 1.0 / (l.legend_h - 1))));
  BOOST_TEST((img.pixel(l.legend_x + 5, l.legend_y + l.legend_h - 2) ==
              argus::viridis(1.0 / (l.legend_h - 1))));

  argus::test::scratch_directory dir("viz-png");
  const auto file = dir.path() / "a.png";
  argus::write_attention_png(file, m);
  int wd = 0, ht = 0, channels = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> decoded(
      stbi_load(file.string().c_str(), &wd, &ht, &channels, 3), stbi_image_free);
  BOOST_TEST_REQUIRE(decoded != nullptr);
  BOOST_TEST(wd == img.width);
  BOOST_TEST(ht == img.height);
  BOOST_TEST(std::equal(img.pixels.begin(), img.pixels.end(), decoded.get()));
  BOOST_CHECK_THROW(argus::write_attention_png(dir.path() / "no" / "such" / "dir.png", m),
                    std::runtime_error);
}

BOOST_AUTO_TEST_CASE(text_renders_each_style) {
  const weights_t w = sample_weights();
  const argus::attention_map m =
      argus::make_attention_map(w, {.title = "txt", .query_tokens = {"the", "cat", "sat"}});
  const std::string ascii = argus::attention_text(m, argus::text_style::ascii);
  BOOST_TEST(ascii.starts_with("txt\n"));
  BOOST_TEST(count(ascii, "head ") == 2);
  // Row "sat": head 0 holds 9..12 / 24 of the scale, head 1 21..24 / 24; " .:-=+*#%@".
  BOOST_TEST(ascii.find("sat --====++   sat %%@@@@@@\n") != std::string::npos, ascii);
  BOOST_TEST(ascii.find("keys: 0=0 1=1 2=2 3=3") != std::string::npos);
  BOOST_TEST(ascii.find("@@ " + argus::legend_number(m.scale_max)) != std::string::npos);
  for (unsigned char c : ascii) BOOST_TEST(c < 0x80);
  const std::string unicode = argus::attention_text(m, argus::text_style::unicode);
  BOOST_TEST(
      unicode.find("sat \u2591\u2591\u2592\u2592\u2592\u2592\u2592\u2592   sat "
                   "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\n") != std::string::npos,
      unicode);
  const std::string colour = argus::attention_text(m, argus::text_style::ansi256);
  BOOST_TEST(count(colour, "\x1b[48;5;") == 2 * 3 * 4 + 5);
  BOOST_TEST(argus::detail::xterm_cube_index(argus::viridis(1.0)) ==
             220);  // (253,231,37) -> (255,215,0)
  // Narrow: one head per block of lines.
  const std::string narrow = argus::attention_text(m, argus::text_style::ascii, 20);
  BOOST_TEST(count(narrow, "head 0") == 1);
  BOOST_TEST(narrow.find("head 0   ") == std::string::npos);
  // A panel narrower than its title (one key: 2 columns of cells) is widened to the title, and
  // its lines filled: "head 10" was cut to "head ", and the next panel's cells followed.
  const std::string one_key =
      argus::attention_text(uniform_map(11, 2, 1, 8), argus::text_style::ascii);
  BOOST_TEST(one_key.find("  head 9   ") != std::string::npos, one_key);
  BOOST_TEST(one_key.find("  head 10\n") != std::string::npos, one_key);
  BOOST_TEST(one_key.find("1 ++        1 ++") != std::string::npos, one_key);
}

BOOST_AUTO_TEST_CASE(make_attention_map_rejects_a_negative_nan_or_infinite_scale_max) {
  const weights_t w = sample_weights();
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto rejects = [&](double scale_max, const std::string& shown) {
    return throws_naming<std::invalid_argument>(
        [&] { (void)argus::make_attention_map(w, {.scale_max = scale_max}); },
        {"argus::make_attention_map: scale_max is " + shown, "0 (the largest weight)"});
  };
  BOOST_TEST(rejects(-1, "-1"));
  BOOST_TEST(rejects(-0.5, "-0.5"));
  BOOST_TEST(rejects(std::numeric_limits<double>::quiet_NaN(), "nan"));
  BOOST_TEST(rejects(inf, "inf"));
  BOOST_TEST(rejects(-inf, "-inf"));
  // 0 (the largest weight) and any positive finite value stay accepted.
  BOOST_TEST(argus::make_attention_map(w, {.scale_max = 0}).scale_max == double(w(0, 1, 2, 3)));
  BOOST_TEST(argus::make_attention_map(w, {.scale_max = 1e-300}).scale_max == 1e-300);
}

BOOST_AUTO_TEST_CASE(every_renderer_checks_the_fields_of_the_map_it_is_given) {
  const weights_t w = sample_weights();
  const argus::attention_map good = argus::make_attention_map(w);  // 2 heads, 3 x 4
  argus::test::scratch_directory dir("viz-check");
  const auto svg_file = dir.path() / "bad.svg", png_file = dir.path() / "bad.png";
  // Each renderer, by the name its errors give.
  const std::vector<std::pair<std::string, std::function<void(const argus::attention_map&)>>>
      renderers = {
          {"argus::attention_svg", [](const auto& m) { (void)argus::attention_svg(m); }},
          {"argus::write_attention_svg",
           [&](const auto& m) { argus::write_attention_svg(svg_file, m); }},
          {"argus::render_attention", [](const auto& m) { (void)argus::render_attention(m); }},
          {"argus::write_attention_png",
           [&](const auto& m) { argus::write_attention_png(png_file, m); }},
          {"argus::attention_text",
           [](const auto& m) { (void)argus::attention_text(m, argus::text_style::ascii); }},
      };
  const auto edited = [&](const std::function<void(argus::attention_map&)>& edit) {
    argus::attention_map m = good;
    edit(m);
    return m;
  };
  struct bad_map {
    argus::attention_map map;
    bool shape;  // shape_error; else std::invalid_argument for a field that is not a size
    std::string message;
  };
  const std::vector<bad_map> bad = {
      {edited([](auto& m) { m.weights.pop_back(); }), true,
       "the number of weights is 23 but heads * seq_q * seq_kv (2 * 3 * 4) is 24"},
      {edited([](auto& m) { m.heads = 3; }), true,
       "the number of weights is 24 but heads * seq_q * seq_kv (3 * 3 * 4) is 36"},
      {edited([](auto& m) { m.seq_kv = 5; }), true, "(2 * 3 * 5) is 30"},
      {edited([](auto& m) { m.heads = std::numeric_limits<std::size_t>::max() / 2; }), true,
       "does not fit in std::size_t; the map holds 24 weights"},
      {edited([](auto& m) { m.query_labels.pop_back(); }), true,
       "the number of query_labels is 2 but seq_q is 3"},
      {edited([](auto& m) { m.key_labels.push_back("extra"); }), true,
       "the number of key_labels is 5 but seq_kv is 4"},
      {edited([](auto& m) { m.columns = 0; }), false, "columns is 0"},
      {edited([](auto& m) { m.scale_max = 0; }), false, "scale_max is 0; "},
      {edited([](auto& m) { m.scale_max = -2; }), false, "scale_max is -2; "},
      {edited([](auto& m) { m.scale_max = std::numeric_limits<double>::quiet_NaN(); }), false,
       "scale_max is nan; "},
      {edited([](auto& m) { m.scale_max = std::numeric_limits<double>::infinity(); }), false,
       "scale_max is inf; "},
  };
  for (const auto& renderer : renderers) {
    const std::string& name = renderer.first;  // Clang 14 captures no structured bindings
    const auto& render = renderer.second;
    BOOST_TEST_CONTEXT(name) {
      BOOST_CHECK_NO_THROW(render(good));
      std::filesystem::remove(svg_file), std::filesystem::remove(png_file);
      for (const auto& b : bad) {
        const auto call = [&] { render(b.map); };
        if (b.shape) {
          BOOST_TEST(throws_naming<argus::shape_error>(call, {name + ": ", b.message}), b.message);
        } else {
          BOOST_TEST(throws_naming<std::invalid_argument>(call, {name + ": ", b.message}),
                     b.message);
          try {
            call();
          } catch (const argus::shape_error&) {
            BOOST_ERROR(b.message << ": not a size, so not a shape_error");
          } catch (const std::invalid_argument&) {
          }
        }
      }
      // The writers check before they open the file: a bad map leaves none behind.
      BOOST_TEST(!std::filesystem::exists(svg_file));
      BOOST_TEST(!std::filesystem::exists(png_file));
    }
  }
  // The renderers take a map however it is passed: a mutable lvalue, a temporary.
  argus::attention_map mutable_map = good;
  BOOST_TEST(argus::attention_text(mutable_map, argus::text_style::ascii) ==
             argus::attention_text(good, argus::text_style::ascii));
  BOOST_TEST(argus::attention_svg(argus::make_attention_map(w)) == argus::attention_svg(good));
  BOOST_TEST(argus::render_attention(argus::detail::rejected{}).pixels.empty());
}

BOOST_AUTO_TEST_CASE(writers_report_a_write_that_fails) {
  // /dev/full accepts the open and fails every write with ENOSPC, as a full disk does; the PNG
  // writer used to report success there (stb checks neither fwrite nor fclose). Both a large
  // picture and the smallest one (2 heads of 1 x 1) are tried.
  const std::filesystem::path full = "/dev/full";
  if (!std::filesystem::exists(full)) {
    BOOST_TEST_MESSAGE("no /dev/full: the failed-write checks are skipped");
    return;
  }
  weights_t one(1, 1, 1);  // (B,H,SEQ_Q,SEQ_KV)
  one.fill(0.5f);
  const weights_t w = sample_weights();
  for (const argus::attention_map& m :
       {argus::make_attention_map(w), argus::make_attention_map(one)}) {
    BOOST_TEST(throws_naming<std::runtime_error>([&] { argus::write_attention_png(full, m); },
                                                 {"argus::write_attention_png: ", "/dev/full"}));
    BOOST_TEST(throws_naming<std::runtime_error>([&] { argus::write_attention_svg(full, m); },
                                                 {"argus::write_attention_svg: ", "/dev/full"}));
  }
  // A directory cannot be opened as a file.
  argus::test::scratch_directory dir("viz-write");
  const argus::attention_map m = argus::make_attention_map(w);
  BOOST_TEST(throws_naming<std::runtime_error>([&] { argus::write_attention_png(dir.path(), m); },
                                               {"argus::write_attention_png: cannot open "}));
  BOOST_TEST(throws_naming<std::runtime_error>([&] { argus::write_attention_svg(dir.path(), m); },
                                               {"argus::write_attention_svg: cannot open "}));
}

BOOST_AUTO_TEST_CASE(a_picture_too_large_to_draw_is_an_error_not_an_overflow) {
  // Each is a few MB of weights, but its picture is beyond what a renderer draws: stb's PNG
  // encoder sizes its buffer as (3 * width + 1) * height in int, which a map of 16 heads of
  // 2348 x 2348 (37 832 x 37 854 pixels) wrapped to 1.3 MB and overran; the layout itself
  // computed in int and, for millions of heads, gave a 144 x 190 picture with every panel off it.
  struct case_t {
    argus::attention_map m;
    std::vector<std::string> says;
  };
  const std::vector<case_t> cases = {
      // one row of 17 000 keys: 4 px each, wider than 2^16 pixels
      {uniform_map(1, 1, 17000, 4), {"(1, 1, 17000) weights would be 68102 x 134 pixels"}},
      // 240 000 heads of 1 x 1 in 555 columns: 30 042 x 30 340 pixels, 2.7 GB of RGB rows
      {uniform_map(240000, 1, 1, 555),
       {"(240000, 1, 1) weights would be 30042 x 30340 pixels", "2147483647 bytes"}},
      // more heads than the layout computes: over 2^16 pixels whatever the columns
      {uniform_map((std::size_t{1} << 20) + 1, 1, 1, 1 << 10), {"more than 65536 pixels"}},
  };
  argus::test::scratch_directory dir("viz-large");
  for (const auto& c : cases) {
    std::vector<std::string> png = c.says, svg = c.says, render = c.says;
    png.insert(png.begin(), "argus::write_attention_png: the picture of ");
    svg.insert(svg.begin(), "argus::attention_svg: the picture of ");
    render.insert(render.begin(), "argus::render_attention: the picture of ");
    BOOST_TEST(throws_naming<std::invalid_argument>(
        [&] { argus::write_attention_png(dir.path() / "large.png", c.m); }, png));
    BOOST_TEST(throws_naming<std::invalid_argument>([&] { (void)argus::attention_svg(c.m); }, svg));
    BOOST_TEST(
        throws_naming<std::invalid_argument>([&] { (void)argus::render_attention(c.m); }, render));
    BOOST_TEST(!std::filesystem::exists(dir.path() / "large.png"));
  }
  // Text has no pixels: the one-row map of 17 000 keys is text of 17 000 cells in a line.
  const std::string long_line = argus::attention_text(cases[0].m, argus::text_style::ascii);
  BOOST_TEST(long_line.size() > 2 * 17000u);
  // Within the bounds: 1 x 16 000 keys, 64 126 pixels wide, is drawn.
  const argus::rgb_image wide = argus::render_attention(uniform_map(1, 1, 16000, 4));
  BOOST_TEST(wide.width > 64000);
  BOOST_TEST(wide.pixels.size() == std::size_t(wide.width) * std::size_t(wide.height) * 3);
}

BOOST_AUTO_TEST_CASE(a_failed_write_leaves_the_old_file_as_it_was) {
  // A write that fails part-way (here the process's file size limit, as a full disk would)
  // used to leave the first bytes of the new picture in place of the old one, a truncated
  // file that still opened as a PNG or an SVG. The writers now write beside the file and
  // rename at the end.
  argus::test::scratch_directory dir("viz-keep");
  const argus::attention_map small = argus::make_attention_map(sample_weights());
  const argus::attention_map large = uniform_map(4, 40, 40, 4);
  const std::filesystem::path png = dir.path() / "keep.png", svg = dir.path() / "keep.svg";
  argus::write_attention_png(png, small);
  argus::write_attention_svg(svg, small);
  const std::string old_png = file_text(png), old_svg = file_text(svg);
  BOOST_TEST_REQUIRE(old_png.size() < 8192);
  BOOST_TEST_REQUIRE(old_svg.size() < 8192);

  rlimit old_limit{};
  BOOST_TEST_REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // a failed write, not a signal
  rlimit limit = old_limit;
  limit.rlim_cur = 8192;
  BOOST_TEST_REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  const bool png_threw =
      throws_naming<std::runtime_error>([&] { argus::write_attention_png(png, large); },
                                        {"argus::write_attention_png: cannot write ", "keep.png"});
  const bool svg_threw =
      throws_naming<std::runtime_error>([&] { argus::write_attention_svg(svg, large); },
                                        {"argus::write_attention_svg: cannot write ", "keep.svg"});
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  BOOST_TEST(png_threw);
  BOOST_TEST(svg_threw);
  BOOST_TEST(file_text(png) == old_png);
  BOOST_TEST(file_text(svg) == old_svg);
  std::size_t files = 0;  // no temporary file left behind
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  BOOST_TEST(files == 2u);

  // A write that succeeds replaces the file, keeps its permissions, and through a symbolic
  // link replaces the link's target, not the link.
  std::filesystem::permissions(
      png, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  argus::write_attention_png(png, large);
  BOOST_TEST(file_text(png) != old_png);
  BOOST_TEST(((std::filesystem::status(png).permissions() & std::filesystem::perms::all) ==
              (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)));
  const std::filesystem::path link = dir.path() / "link.svg";
  std::filesystem::create_symlink(svg, link);
  argus::write_attention_svg(link, large);
  BOOST_TEST(std::filesystem::is_symlink(link));
  BOOST_TEST(file_text(svg) == argus::attention_svg(large));
}

BOOST_AUTO_TEST_CASE(labels_that_are_not_utf8_or_are_cut_still_give_utf8) {
  // SVG is UTF-8 XML: a label cut at byte 15 inside a character, a raw byte (a byte-level BPE
  // token), U+FFFE in the title each made the whole file unreadable to XML readers.
  argus::attention_map m = uniform_map(1, 3, 3, 4);
  m.query_labels = {"a\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
                    "\xC4", "ok"};  // a日本語日本語 (19 bytes); 0xC4
  m.key_labels = {"\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80"};  // surrogate, overlong, >10FFFF
  m.title = "title \xEF\xBF\xBE end";                               // U+FFFE
  const std::string svg = argus::attention_svg(m);
  BOOST_TEST(is_utf8(svg));
  BOOST_TEST(xml_problem(svg) == "");
  BOOST_TEST(svg.find("\xEF\xBF\xBE") == std::string::npos);
  BOOST_TEST(count(svg, "\xEF\xBF\xBD") >= 5u);  // U+FFFD for each bad byte run and U+FFFE
  // The 19-byte label cut to 15 bytes and '~', back to the character boundary at 13: a日本語日~
  BOOST_TEST(svg.find("a\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE6\x97\xA5~") != std::string::npos);
  for (const auto style : {argus::text_style::ascii, argus::text_style::unicode}) {
    argus::attention_map good_labels = uniform_map(1, 2, 2, 4);
    good_labels.query_labels = {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE6\x97\xA5", "b"};
    BOOST_TEST(is_utf8(argus::attention_text(good_labels, style)));
  }
}
