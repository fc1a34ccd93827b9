// argus/io/npy.hpp -- io layer (optional): tensors from NumPy .npy files.
//
//     argus::stored_tensor w = argus::read_npy("in_proj_weight.npy");
//     argus::npy_directory dir("exported/");   // a TensorSource: <dir>/<name>.npy per tensor
//
// Format versions 1.0, 2.0 and 3.0 (3.0 differs only in allowing UTF-8 in the header).
// Accepted: little-endian float16, float32, float64 ('<f2', '<f4', '<f8'), C order. Fortran
// order, big-endian data and every other dtype are rejected with load_error; so are a
// malformed header and data that is shorter or longer than the header's shape says.
#pragma once

#include <argus/io/stored_tensor.hpp>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace argus {

namespace detail {

/// The dictionary of a .npy header, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4),
/// }
struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

/// A parser for the Python literal the header holds: a dict of str -> str | bool | tuple of int.
class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, std::string where)
      : s_(text), where_(std::move(where)) {}

  npy_header parse() {
    npy_header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (skip_space(), peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        h.descr = string_literal(), seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean(), seen_order = true;
      } else if (key == "shape") {
        h.shape = int_tuple(), seen_shape = true;
      } else {
        fail("unknown key " + detail::quote_text(key) +
             " (a .npy header has 'descr', 'fortran_order' and 'shape')");
      }
      skip_space();
      if (peek() == ',')
        ++i_;
      else if (peek() != '}')
        fail("expected ',' or '}' after the value of '" + key + "'");
    }
    ++i_;
    skip_space();  // numpy pads the header with spaces and ends it with '\n'
    if (i_ != s_.size()) fail("text after the closing '}': " + detail::quote_text(s_.substr(i_)));
    if (!seen_descr || !seen_order || !seen_shape)
      fail(std::string("the header lacks the key '") +
           (!seen_descr   ? "descr"
            : !seen_order ? "fortran_order"
                          : "shape") +
           "'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    // The header as numpy writes it ends in spaces and a newline: left out of the message.
    const std::size_t end = s_.find_last_not_of(" \t\r\n");
    throw load_error(
        where_ + ": malformed .npy header: " + what + " (header: " +
        detail::quote_text(s_.substr(0, end == std::string_view::npos ? 0 : end + 1), 200, '"') +
        ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") return i_ += 4, true;
    if (s_.substr(i_, 5) == "False") return i_ += 5, false;
    fail("'fortran_order' is neither True nor False");
  }
  std::vector<std::size_t> int_tuple() {
    expect('(');
    std::vector<std::size_t> out;
    while (skip_space(), peek() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("'shape' holds a non-integer");
      std::size_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const std::size_t d = static_cast<std::size_t>(peek() - '0');
        if (v > (std::numeric_limits<std::size_t>::max() - d) / 10) fail("'shape' overflows");
        v = v * 10 + d;
        ++i_;
      }
      out.push_back(v);
      skip_space();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        fail("expected ',' or ')' in 'shape'");
    }
    ++i_;
    return out;
  }

  std::string_view s_;
  std::string where_;
  std::size_t i_ = 0;
};

inline std::optional<stored_dtype> npy_dtype(std::string_view descr) {
  if (descr == "<f2") return stored_dtype::float16;
  if (descr == "<f4") return stored_dtype::float32;
  if (descr == "<f8") return stored_dtype::float64;
  return std::nullopt;
}

}  // namespace detail

/// Reads the .npy file `file` as the tensor `name` (default: the file's stem).
inline stored_tensor read_npy(const std::filesystem::path& file, std::string name = {}) {
  if (name.empty()) name = file.stem().string();
  const std::string where = file.string() + ": tensor '" + name + "'";
  const std::size_t file_size = detail::file_size_of(file);
  constexpr std::string_view magic = "\x93NUMPY";
  if (file_size < 10)
    throw load_error(where + ": " + std::to_string(file_size) +
                     " bytes, too short for a .npy file");
  const std::vector<unsigned char> pre =
      detail::read_bytes(file, 0, std::min<std::size_t>(12, file_size));
  if (std::string_view(reinterpret_cast<const char*>(pre.data()), 6) != magic)
    throw load_error(where + ": not a .npy file (it does not start with \\x93NUMPY)");
  const unsigned major = pre[6], minor = pre[7];
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = detail::load_little_endian<std::uint16_t>(pre.data() + 8), header_start = 10;
  } else if (major == 2 || major == 3) {
    if (file_size < 12)
      throw load_error(where + ": truncated: " + std::to_string(file_size) +
                       " bytes, too short for the 12-byte preamble of a version " +
                       std::to_string(major) + ".x .npy file");
    header_len = detail::load_little_endian<std::uint32_t>(pre.data() + 8), header_start = 12;
  } else {
    throw load_error(where + ": .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " is not supported (1.0, 2.0 and 3.0 are)");
  }
  if (header_len > file_size - header_start)
    throw load_error(where + ": truncated: the header says it is " + std::to_string(header_len) +
                     " bytes long, but only " + std::to_string(file_size - header_start) +
                     " follow");
  const std::vector<unsigned char> raw = detail::read_bytes(file, header_start, header_len);
  const std::string text(raw.begin(), raw.end());
  const detail::npy_header h = detail::npy_header_parser(text, where).parse();

  const auto dtype = detail::npy_dtype(h.descr);
  if (!dtype)
    throw load_error(where + ": dtype " + detail::quote_text(h.descr) +
                     " is not supported: expected little-endian "
                     "float16, float32 or float64 ('<f2', '<f4', '<f8')");
  if (h.fortran_order)
    throw load_error(where +
                     ": Fortran (column-major) order is not supported: expected C order; "
                     "save numpy.ascontiguousarray(a) instead");

  stored_tensor t;
  t.name = std::move(name);
  t.origin = file.string();
  t.dtype = *dtype;
  t.shape = h.shape;
  const std::size_t elem = dtype_size(t.dtype);
  const std::size_t data_bytes = detail::element_count(t.shape, elem, where) * elem;
  const std::size_t data_start = header_start + header_len, present = file_size - data_start;
  if (present != data_bytes)
    throw load_error(where + (present < data_bytes ? ": truncated" : ": trailing bytes") +
                     ": shape " + detail::shape_string(t.shape) + " of " + dtype_name(t.dtype) +
                     " needs " + std::to_string(data_bytes) + " bytes of data, the file holds " +
                     std::to_string(present));
  t.bytes = detail::read_bytes(file, data_start, data_bytes);
  return t;
}

/// A directory holding one <name>.npy per tensor, as
///     for k, v in module.state_dict().items(): numpy.save(f"{dir}/{k}.npy", v.numpy())
/// writes it. A TensorSource.
class npy_directory {
 public:
  explicit npy_directory(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec))
      throw load_error(dir_.string() + ": no such directory (expected one .npy file per tensor)");
  }

  const std::filesystem::path& directory() const noexcept { return dir_; }
  std::string origin(const std::string& name) const { return path(name).string(); }
  bool contains(const std::string& name) const {
    std::error_code ec;
    return std::filesystem::is_regular_file(path(name), ec);
  }
  /// The tensor in <dir>/<name>.npy; load_error when the file is missing or unreadable.
  stored_tensor read(const std::string& name) const {
    if (!contains(name)) {
      std::error_code ec;
      throw load_error(
          origin(name) + ": missing tensor '" + name + "' (" +
          (std::filesystem::exists(path(name), ec) ? "not a regular file" : "no such file") + ")");
    }
    return read_npy(path(name), name);
  }

 private:
  std::filesystem::path path(const std::string& name) const { return dir_ / (name + ".npy"); }
  std::filesystem::path dir_;
};

}  // namespace argus
