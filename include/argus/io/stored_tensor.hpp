// argus/io/stored_tensor.hpp -- io layer (optional): a tensor read from a file, before it
// becomes part of a module.
//
//     argus::stored_tensor t = argus::read_npy("w.npy");      // io/npy.hpp
//     std::vector<float> v = t.values<float>();                // exact conversions only
//
// A stored_tensor keeps the bytes of the file (little-endian, row-major) with their dtype
// and shape, and converts them on request. Only exact conversions are made: float16 and
// bfloat16 widen to float or double, float32 to float or double, float64 only to double;
// anything else throws load_error naming the tensor, its file and what was expected.
// Not included by argus.hpp: the io/ headers are optional.
#pragma once

#include <argus/detail/quote_text.hpp>
#include <argus/diagnostics/relations.hpp>

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace argus {

/// Thrown when a file cannot be read as the tensors asked for: missing, truncated or
/// malformed, an unsupported dtype, or a shape that does not fit. what() names the file,
/// the tensor and what was expected.
class load_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Element types a stored tensor can hold (and be converted from).
enum class stored_dtype { float16, bfloat16, float32, float64 };

/// "float16", "bfloat16", "float32" or "float64".
constexpr const char* dtype_name(stored_dtype d) noexcept {
  switch (d) {
    case stored_dtype::float16:
      return "float16";
    case stored_dtype::bfloat16:
      return "bfloat16";
    case stored_dtype::float32:
      return "float32";
    case stored_dtype::float64:
      return "float64";
  }
  return "?";
}

/// Bytes per element.
constexpr std::size_t dtype_size(stored_dtype d) noexcept {
  return d == stored_dtype::float64 ? 8 : d == stored_dtype::float32 ? 4 : 2;
}

namespace detail {

/// "(3, 16)"; "()" for a scalar.
inline std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// The product of the extents; load_error when it overflows (a malformed header).
inline std::size_t element_count(const std::vector<std::size_t>& shape, std::size_t elem_size,
                                 const std::string& where) {
  std::size_t n = 1;
  for (std::size_t e : shape) {
    if (e != 0 && n > std::numeric_limits<std::size_t>::max() / e / elem_size)
      throw load_error(where + ": shape " + shape_string(shape) + " is too large");
    n *= e;
  }
  return n;
}

template <class U>
U load_little_endian(const unsigned char* p) noexcept {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= U(p[i]) << (8 * i);
  return v;
}

/// IEEE binary16 to float, exactly (subnormals, infinities and NaN kept).
inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;  // man * 2^-24, exact
  return sign ? -mag : mag;
}

/// count bytes of file from offset; load_error naming the file when it cannot be read.
inline std::vector<unsigned char> read_bytes(const std::filesystem::path& file, std::size_t offset,
                                             std::size_t count) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw load_error(file.string() + ": cannot open the file for reading");
  std::vector<unsigned char> out(count);
  in.seekg(static_cast<std::streamoff>(offset));
  if (count) in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(count));
  if (!in || static_cast<std::size_t>(in.gcount()) != count)
    throw load_error(file.string() + ": cannot read " + std::to_string(count) +
                     " bytes at offset " + std::to_string(offset));
  return out;
}

/// The size of file in bytes; load_error when it is not a readable regular file.
inline std::size_t file_size_of(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw load_error(file.string() + ": no such file (or not a regular file)");
  const auto n = std::filesystem::file_size(file, ec);
  if (ec) throw load_error(file.string() + ": cannot read its size: " + ec.message());
  return static_cast<std::size_t>(n);
}

}  // namespace detail

/// A tensor as a file holds it: dtype, shape (row-major, last index fastest) and the
/// little-endian bytes of its elements.
struct stored_tensor {
  std::string name;    ///< the tensor's name (a state-dict key, or the file stem)
  std::string origin;  ///< the file it came from, for messages
  stored_dtype dtype = stored_dtype::float32;
  std::vector<std::size_t> shape;
  std::vector<unsigned char> bytes;  ///< size() * dtype_size(dtype) bytes

  /// Number of elements: the product of shape (1 for a scalar).
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t e : shape) n *= e;
    return n;
  }

  /// "origin: tensor 'name'", the start of every message about this tensor (the name as
  /// detail::quote_text shows it: a name read from a file may hold anything).
  std::string where() const { return origin + ": tensor " + detail::quote_text(name, 120); }

  /// True when values<T>() converts exactly (no narrowing).
  template <class T>
  bool converts_exactly_to() const noexcept {
    return std::is_same_v<T, double> || dtype != stored_dtype::float64;
  }

  /// The elements as T (float or double: value_type_is_float_or_double), row-major. A float64
  /// tensor read as float throws load_error: argus never rounds weights silently.
  template <class T>
  std::vector<T> values() const {
    if constexpr (!value_type_is_float_or_double<T>) {
      static_assert(value_type_is_float_or_double<T>,
                    "value_type_is_float_or_double: argus::stored_tensor::values<T>() converts "
                    "the elements to float or double");
      return {};
    } else {
      return converted<T>();
    }
  }

 private:
  template <class T>
  std::vector<T> converted() const {
    if (!converts_exactly_to<T>())
      throw load_error(where() +
                       " is float64, but the module holds float: converting would "
                       "round every weight; export it as float32 (tensor.float()) or declare "
                       "the module with double");
    const std::size_t n = size();
    if (bytes.size() != n * dtype_size(dtype))
      throw load_error(where() + ": " + std::to_string(bytes.size()) + " bytes for " +
                       std::to_string(n) + " elements of " + dtype_name(dtype));
    std::vector<T> out(n);
    const unsigned char* p = bytes.data();
    for (std::size_t i = 0; i < n; ++i) {
      switch (dtype) {
        case stored_dtype::float16:
          out[i] = static_cast<T>(
              detail::half_to_float(detail::load_little_endian<std::uint16_t>(p + 2 * i)));
          break;
        case stored_dtype::bfloat16:
          out[i] = static_cast<T>(std::bit_cast<float>(
              std::uint32_t(detail::load_little_endian<std::uint16_t>(p + 2 * i)) << 16));
          break;
        case stored_dtype::float32:
          out[i] = static_cast<T>(
              std::bit_cast<float>(detail::load_little_endian<std::uint32_t>(p + 4 * i)));
          break;
        case stored_dtype::float64:
          out[i] = static_cast<T>(
              std::bit_cast<double>(detail::load_little_endian<std::uint64_t>(p + 8 * i)));
          break;
      }
    }
    return out;
  }
};

/// Where named tensors come from: a safetensors file (io/safetensors.hpp) or a directory of
/// .npy files (io/npy.hpp). read() throws load_error for a missing or unreadable tensor;
/// origin(name) is the file that does or would hold it.
template <class S>
concept TensorSource = requires(const S& s, const std::string& name) {
  { s.contains(name) } -> std::same_as<bool>;
  { s.read(name) } -> std::same_as<stored_tensor>;
  { s.origin(name) } -> std::convertible_to<std::string>;
};

/// load_pytorch_mha<M>(src) reads from a TensorSource: an argus::safetensors_file or an
/// argus::npy_directory (not a path: open the file first), one atomic constraint so that a
/// compiler reports the relation, not each member it misses.
template <class S>
concept argument_is_a_tensor_source = bool(TensorSource<S>);

}  // namespace argus
