// tests/support/golden.hpp -- test support: loads the golden reference cases (shared/golden,
// format in its README.md) and checks results against them with the README's tolerances.
//
//   for (const std::string& name : argus::test::golden_case_names()) {
//     const argus::test::golden_case c = argus::test::load_golden_case(name);
//     const argus::test::golden_tensor& w_q = c.tensor("W_q");   // (d_model, heads*d_k) float32
//     ...
//     const argus::test::tolerance_check out = argus::test::check_out(c, y);
//     BOOST_TEST(out.ok(), c.name << ": " << out);
//   }
//
// The directory comes from the environment variable ARGUS_GOLDEN_DIR, else from the macro
// ARGUS_GOLDEN_DIR that tests/CMakeLists.txt defines (the CMake cache variable of that name).
// Every malformed input throws std::runtime_error naming the file and the problem.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <ostream>
#include <ranges>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace argus::test {

/// One tensor of a golden case: exactly one of f32, f64, u8 holds the values, per dtype.
struct golden_tensor {
  std::string name;
  std::string dtype;               // "float32", "float64" or "uint8"
  std::vector<std::size_t> shape;  // row-major, last index fastest
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<std::uint8_t> u8;

  /// Number of elements: the product of shape.
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
  }
};

/// One case directory: every case.txt key in `fields`, the common ones typed, and its tensors.
struct golden_case {
  std::string name;
  std::filesystem::path dir;
  std::map<std::string, std::string, std::less<>> fields;  // every key=value of case.txt

  std::size_t batch = 0, seq_q = 0, seq_kv = 0, d_model = 0, heads = 0, kv_heads = 0;
  std::size_t d_k = 0, d_v = 0, kdim = 0, vdim = 0;
  bool bias = false;
  std::string mask;  // "none", "causal", "key_padding" or "both"
  double max_abs_out = 0, max_abs_logit = 0, scale = 0;

  std::vector<golden_tensor> tensors;  // in the order of the `tensors` key

  bool has_tensor(std::string_view t) const noexcept {
    return std::ranges::any_of(tensors, [&](const golden_tensor& x) { return x.name == t; });
  }
  /// The tensor named t; throws std::out_of_range naming it and the case.
  const golden_tensor& tensor(std::string_view t) const {
    for (const golden_tensor& x : tensors)
      if (x.name == t) return x;
    throw std::out_of_range("golden case '" + name + "' has no tensor '" + std::string(t) + "'");
  }
  /// The raw value of a case.txt key; throws std::out_of_range naming it and the case.
  const std::string& field(std::string_view key) const {
    if (auto it = fields.find(key); it != fields.end()) return it->second;
    throw std::out_of_range("golden case '" + name + "' has no key '" + std::string(key) + "'");
  }
};

namespace detail {

// (Appends, not "'" + std::string: GCC 12 at -O3 warns on a literal before a temporary string,
// -Wstringop-overflow, a false positive of its libstdc++, bug 105651.)
inline std::string in_quotes(std::string_view s) { return std::string("'").append(s).append("'"); }

[[noreturn]] inline void fail(const std::filesystem::path& file, const std::string& what) {
  throw std::runtime_error(file.string() + ": " + what);
}

inline std::size_t parse_size(const std::filesystem::path& file, std::string_view key,
                              std::string_view text) {
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    fail(file, "key " + in_quotes(key) + ": " + in_quotes(text) + " is not a non-negative integer");
  return v;
}

inline double parse_double(const std::filesystem::path& file, std::string_view key,
                           std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v))
    fail(file, "key " + in_quotes(key) + ": " + in_quotes(text) + " is not a finite number");
  return v;
}

inline bool parse_bool(const std::filesystem::path& file, std::string_view key,
                       std::string_view text) {
  if (text == "1") return true;
  if (text == "0") return false;
  fail(file, "key " + in_quotes(key) + ": " + in_quotes(text) + " is not 0 or 1");
}

/// Splits "a,b,c" at commas; an empty string gives no parts.
inline std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  if (s.empty()) return parts;
  for (std::size_t start = 0;;) {
    std::size_t comma = s.find(',', start);
    parts.push_back(s.substr(start, comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

inline std::size_t dtype_bytes(std::string_view dtype) {
  if (dtype == "float32") return 4;
  if (dtype == "float64") return 8;
  if (dtype == "uint8") return 1;
  return 0;
}

template <class T>
void read_values(const std::filesystem::path& file, std::size_t count, std::vector<T>& out) {
  static_assert(std::endian::native == std::endian::little,
                "golden .bin files are little-endian; a big-endian reader is not written");
  out.resize(count);
  std::ifstream in(file, std::ios::binary);
  if (!in || !in.read(reinterpret_cast<char*>(out.data()),
                      static_cast<std::streamsize>(count * sizeof(T))))
    fail(file, "cannot read " + std::to_string(count * sizeof(T)) + " bytes");
}

inline golden_tensor load_tensor(const golden_case& c, const std::filesystem::path& case_txt,
                                 std::string_view t) {
  auto key = [&](std::string_view prefix) -> const std::string& {
    std::string k = std::string(prefix) + std::string(t);
    if (auto it = c.fields.find(k); it != c.fields.end()) return it->second;
    fail(case_txt,
         "tensor " + in_quotes(t) + " is listed in 'tensors' but has no key " + in_quotes(k));
  };
  golden_tensor x;
  x.name = std::string(t);
  const std::string& file_name = key("file.");
  x.dtype = key("dtype.");
  const std::string& shape_text = key("shape.");

  const std::filesystem::path file = c.dir / file_name;
  const std::size_t elem = dtype_bytes(x.dtype);
  if (elem == 0) fail(file, "unknown dtype " + in_quotes(x.dtype) + " (float32, float64 or uint8)");
  std::string product;
  for (std::string_view d : split_commas(shape_text)) {
    x.shape.push_back(parse_size(case_txt, "shape." + x.name, d));
    if (!product.empty()) product += '*';
    product.append(d);
  }
  if (x.shape.empty()) fail(case_txt, "key 'shape." + x.name + "' is empty");

  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) fail(file, "missing file");
  const std::uintmax_t bytes = std::filesystem::file_size(file, ec);
  if (ec) fail(file, "cannot read its size: " + ec.message());
  const std::size_t count = x.size();
  if (bytes != count * elem)
    fail(file, std::to_string(bytes) + " bytes, expected " + std::to_string(count * elem) + " = " +
                   product + " " + x.dtype);

  if (x.dtype == "float32") read_values(file, count, x.f32);
  if (x.dtype == "float64") read_values(file, count, x.f64);
  if (x.dtype == "uint8") read_values(file, count, x.u8);
  return x;
}

}  // namespace detail

/// The golden data directory: $ARGUS_GOLDEN_DIR, else the ARGUS_GOLDEN_DIR macro. Throws
/// std::runtime_error when neither is set or the directory has no index.txt.
inline std::filesystem::path golden_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("ARGUS_GOLDEN_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
#ifdef ARGUS_GOLDEN_DIR
    dir = ARGUS_GOLDEN_DIR;
#else
    throw std::runtime_error(
        "argus::test::golden_dir(): set the environment variable ARGUS_GOLDEN_DIR to the golden "
        "data directory (or build with -DARGUS_GOLDEN_DIR=\"...\", as tests/CMakeLists.txt does)");
#endif
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "index.txt", ec))
    throw std::runtime_error(
        "argus::test::golden_dir(): " + (dir / "index.txt").string() +
        " does not exist; point ARGUS_GOLDEN_DIR (environment or CMake cache) at the golden data");
  return dir;
}

/// The case names listed in golden_dir()/index.txt, in file order.
inline std::vector<std::string> golden_case_names() {
  const std::filesystem::path index = golden_dir() / "index.txt";
  std::ifstream in(index);
  if (!in) detail::fail(index, "cannot open");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.empty()) detail::fail(index, "lists no case");
  return names;
}

/// Loads a case: a bare name ("tiny") is looked up in golden_dir(); anything with a directory
/// part ("/tmp/x/tiny", "./tiny") is taken as the case directory itself.
inline golden_case load_golden_case(const std::filesystem::path& name_or_path) {
  golden_case c;
  c.dir = name_or_path.has_parent_path() ? name_or_path : golden_dir() / name_or_path;
  const std::filesystem::path case_txt = c.dir / "case.txt";

  std::ifstream in(case_txt);
  if (!in) detail::fail(case_txt, "missing file (no such golden case?)");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');  // the first '=': values may contain '='
    if (eq == std::string::npos)
      detail::fail(case_txt, "line " + detail::in_quotes(line) + " has no '='");
    c.fields.insert_or_assign(line.substr(0, eq), line.substr(eq + 1));
  }

  auto text = [&](std::string_view key) -> const std::string& {
    if (auto it = c.fields.find(key); it != c.fields.end()) return it->second;
    detail::fail(case_txt, "missing key " + detail::in_quotes(key));
  };
  auto size = [&](std::string_view key) { return detail::parse_size(case_txt, key, text(key)); };
  auto real = [&](std::string_view key) { return detail::parse_double(case_txt, key, text(key)); };

  c.name = text("name");
  c.batch = size("batch");
  c.seq_q = size("seq_q");
  c.seq_kv = size("seq_kv");
  c.d_model = size("d_model");
  c.heads = size("heads");
  c.kv_heads = size("kv_heads");
  c.d_k = size("d_k");
  c.d_v = size("d_v");
  c.kdim = size("kdim");
  c.vdim = size("vdim");
  c.bias = detail::parse_bool(case_txt, "bias", text("bias"));
  c.mask = text("mask");
  if (c.mask != "none" && c.mask != "causal" && c.mask != "key_padding" && c.mask != "both")
    detail::fail(case_txt, "key 'mask': unknown value " + detail::in_quotes(c.mask));
  c.max_abs_out = real("max_abs_out");
  c.max_abs_logit = real("max_abs_logit");
  c.scale = real("scale");

  for (std::string_view t : detail::split_commas(text("tensors")))
    c.tensors.push_back(detail::load_tensor(c, case_txt, t));
  return c;
}

// ---- tolerances (README.md, "Tolerances for a float32 implementation") ----------------------

/// Allowed |y - out_f64| for one element: 1e-4 * max(1, max_abs_out) + 1e-4 * |out_f64|.
inline double out_tolerance(const golden_case& c, double ref) noexcept {
  return 1e-4 * std::max(1.0, c.max_abs_out) + 1e-4 * std::abs(ref);
}
/// Allowed |a - attn_f64| for one element: 2e-6 * max(1, max_abs_logit).
inline double attn_tolerance(const golden_case& c) noexcept {
  return 2e-6 * std::max(1.0, c.max_abs_logit);
}
inline bool within_out_tolerance(const golden_case& c, double y, double ref) noexcept {
  return std::abs(y - ref) <= out_tolerance(c, ref);  // false for NaN
}
inline bool within_attn_tolerance(const golden_case& c, double a, double ref) noexcept {
  return std::abs(a - ref) <= attn_tolerance(c);
}

/// The result of comparing a whole tensor with its float64 reference.
struct tolerance_check {
  std::size_t count = 0;           // elements compared
  double max_abs_error = 0;        // max |y - ref|
  double max_fraction = 0;         // max |y - ref| / tolerance: must be <= 1 (inf if non-finite)
  std::size_t worst_index = 0;     // flat row-major index of max_fraction
  std::size_t over = 0;            // elements beyond their tolerance
  std::size_t masked_nonzero = 0;  // attn only: elements with ref == 0 (masked) but y != 0

  bool ok() const noexcept { return over == 0 && masked_nonzero == 0; }

  friend std::ostream& operator<<(std::ostream& os, const tolerance_check& r) {
    return os << "max |err| " << r.max_abs_error << ", max fraction of tolerance " << r.max_fraction
              << " at flat index " << r.worst_index << ", " << r.over << " of " << r.count
              << " elements over tolerance, " << r.masked_nonzero
              << " masked elements not exactly 0";
  }
};

namespace detail {
template <std::ranges::contiguous_range R, class Tol>
tolerance_check compare(const golden_tensor& ref, const R& y, bool masked_must_be_zero, Tol tol) {
  if (ref.dtype != "float64")
    throw std::invalid_argument("compare against the float64 reference, not '" + ref.name + "'");
  if (static_cast<std::size_t>(std::ranges::size(y)) != ref.f64.size())
    throw std::invalid_argument("result has " + std::to_string(std::ranges::size(y)) +
                                " elements, reference '" + ref.name + "' has " +
                                std::to_string(ref.f64.size()));
  tolerance_check r;
  r.count = ref.f64.size();
  auto it = std::ranges::begin(y);
  for (std::size_t i = 0; i < r.count; ++i, ++it) {
    const double v = static_cast<double>(*it), want = ref.f64[i];
    const double err = std::abs(v - want);
    // A NaN or infinite result is infinitely far off, whatever its tolerance.
    const double frac =
        std::isfinite(v) ? err / tol(want) : std::numeric_limits<double>::infinity();
    if (frac > 1) ++r.over;
    if (masked_must_be_zero && want == 0.0 && v != 0.0) ++r.masked_nonzero;
    if (std::isfinite(err)) r.max_abs_error = std::max(r.max_abs_error, err);
    if (frac > r.max_fraction) {
      r.max_fraction = frac;
      r.worst_index = i;
    }
  }
  return r;
}
}  // namespace detail

/// Compares y, laid out like out (batch, seq_q, d_model), with out_f64 elementwise.
template <std::ranges::contiguous_range R>
tolerance_check check_out(const golden_case& c, const R& y) {
  return detail::compare(c.tensor("out_f64"), y, false,
                         [&](double ref) { return out_tolerance(c, ref); });
}

/// Compares a, laid out like attn (batch, heads, seq_q, seq_kv), with attn_f64 elementwise;
/// masked entries (reference exactly 0) must be exactly 0.
template <std::ranges::contiguous_range R>
tolerance_check check_attn(const golden_case& c, const R& a) {
  const double tol = attn_tolerance(c);
  return detail::compare(c.tensor("attn_f64"), a, true, [tol](double) { return tol; });
}

}  // namespace argus::test
