// tests/support/tensor_files.hpp -- test support: writes .npy and safetensors files, valid
// or deliberately broken, so the io/ tests build every file they read.
//
//     argus::test::write_npy(dir / "w.npy", npy("<f4", {3, 4}, f32_bytes(values)));
//     argus::test::write_safetensors(dir / "m.safetensors", {{"w", "F32", {3, 4}, bytes}});
//
// The writers follow the formats as numpy.save and safetensors.torch.save_file write them
// (npy: 64-byte aligned header padded with spaces and '\n'; safetensors: tensors packed in
// the order given, header padded with spaces to a multiple of 8), with knobs to break them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace argus::test {

using bytes = std::vector<unsigned char>;

template <class U>
void append_little_endian(bytes& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i)
    out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

/// Little-endian float32 bytes of values.
inline bytes f32_bytes(const std::vector<float>& values) {
  bytes out;
  for (float v : values) append_little_endian(out, std::bit_cast<std::uint32_t>(v));
  return out;
}
/// Little-endian float64 bytes of values.
inline bytes f64_bytes(const std::vector<double>& values) {
  bytes out;
  for (double v : values) append_little_endian(out, std::bit_cast<std::uint64_t>(v));
  return out;
}
/// bfloat16 bytes: the upper half of each float32 (values must be representable).
inline bytes bf16_bytes(const std::vector<float>& values) {
  bytes out;
  for (float v : values)
    append_little_endian(out, std::uint16_t(std::bit_cast<std::uint32_t>(v) >> 16));
  return out;
}

inline void write_file(const std::filesystem::path& file, const bytes& content) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(content.data()),
            static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

/// One .npy file's content.
struct npy_spec {
  std::string descr = "<f4";
  std::vector<std::size_t> shape;
  bytes data;
  bool fortran_order = false;
  unsigned major = 1;           // 1: 2-byte header length; 2 and 3: 4-byte
  std::string header_override;  // when non-empty, written instead of the dict
};

/// The bytes numpy.save would write for s.
inline bytes npy_bytes(const npy_spec& s) {
  std::string dict = s.header_override;
  if (dict.empty()) {
    std::string shape = "(";  // numpy's repr of a tuple: (), (3,), (3, 4)
    for (std::size_t i = 0; i < s.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(s.shape[i]);
    shape += s.shape.size() == 1 ? ",)" : ")";
    dict = "{'descr': '" + s.descr + "', 'fortran_order': " + (s.fortran_order ? "True" : "False") +
           ", 'shape': " + shape + ", }";
  }
  const std::size_t prefix = s.major == 1 ? 10 : 12;
  std::size_t total = prefix + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(s.major), 0};
  if (s.major == 1)
    append_little_endian(out, static_cast<std::uint16_t>(dict.size()));
  else
    append_little_endian(out, static_cast<std::uint32_t>(dict.size()));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), s.data.begin(), s.data.end());
  return out;
}

inline void write_npy(const std::filesystem::path& file, const npy_spec& s) {
  write_file(file, npy_bytes(s));
}

/// An npy_spec in one expression (designated initialisers that skip members would warn).
inline npy_spec npy(std::string descr, std::vector<std::size_t> shape, bytes data,
                    bool fortran_order = false, unsigned major = 1,
                    std::string header_override = {}) {
  return {std::move(descr),          std::move(shape), std::move(data), fortran_order, major,
          std::move(header_override)};
}

/// One tensor of a safetensors file.
struct safetensors_entry {
  std::string name;
  std::string dtype;  // "F32", "F64", "BF16", "I64", ...
  std::vector<std::size_t> shape;
  bytes data;
};

/// The bytes safetensors.torch.save_file would write for the entries, in order;
/// header_override replaces the JSON header when non-empty.
inline bytes safetensors_bytes(const std::vector<safetensors_entry>& entries,
                               const std::string& header_override = {}) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::size_t offset = 0;
  for (const safetensors_entry& e : entries) {
    json += ",\"" + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < e.shape.size(); ++i)
      json.append(i ? "," : "").append(std::to_string(e.shape[i]));
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," +
            std::to_string(offset + e.data.size()) + "]}";
    offset += e.data.size();
  }
  json += "}";
  if (!header_override.empty()) json = header_override;
  json += std::string((8 - json.size() % 8) % 8, ' ');
  bytes out;
  append_little_endian(out, static_cast<std::uint64_t>(json.size()));
  out.insert(out.end(), json.begin(), json.end());
  for (const safetensors_entry& e : entries) out.insert(out.end(), e.data.begin(), e.data.end());
  return out;
}

inline void write_safetensors(const std::filesystem::path& file,
                              const std::vector<safetensors_entry>& entries,
                              const std::string& header_override = {}) {
  write_file(file, safetensors_bytes(entries, header_override));
}

/// A fresh empty directory under the system temporary directory, removed on destruction.
class scratch_directory {
 public:
  explicit scratch_directory(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("argus-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_directory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace argus::test
