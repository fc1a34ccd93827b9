// argus/io/safetensors.hpp -- io layer (optional): tensors from a safetensors file, the
// format Hugging Face models ship (https://github.com/huggingface/safetensors).
//
//     argus::safetensors_file f("model.safetensors");   // reads and checks the header only
//     argus::stored_tensor w = f.read("in_proj_weight");  // reads that tensor's bytes
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [48, 16], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {...}}, then the data, offsets relative to its start. Opening checks the
// whole header: valid JSON with no key twice in an object, every entry well formed, offsets
// inside the file and end - begin equal to the shape's element count times the dtype's size, for
// every dtype the format defines, and every byte of the data in exactly one tensor (no overlaps,
// no gaps, nothing after the last tensor: the format's rule). read() converts F32, F64 and
// (exactly, by widening) F16 and BF16; the integer, bool and float8 dtypes, and names the format
// does not define, throw load_error when read. Requires nlohmann-json (Debian: nlohmann-json3-dev).
#pragma once

#include <argus/io/stored_tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace argus {

namespace detail {

/// Bytes per element of each dtype the safetensors format defines; 0 for an unknown name.
inline std::size_t safetensors_dtype_size(std::string_view d) noexcept {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  return 0;
}

inline std::optional<stored_dtype> safetensors_dtype(std::string_view d) noexcept {
  if (d == "F16") return stored_dtype::float16;
  if (d == "BF16") return stored_dtype::bfloat16;
  if (d == "F32") return stored_dtype::float32;
  if (d == "F64") return stored_dtype::float64;
  return std::nullopt;
}

}  // namespace detail

/// One safetensors file: the header is read and checked on construction, tensors on read().
/// A TensorSource.
class safetensors_file {
 public:
  struct entry {
    std::string dtype;  ///< as written: "F32", "BF16", "I64", ...
    std::vector<std::size_t> shape;
    std::size_t begin = 0, end = 0;  ///< byte offsets into the data section
  };

  /// Reads and checks the header of `file`; load_error naming the file and the problem.
  explicit safetensors_file(std::filesystem::path file) : file_(std::move(file)) {
    const std::string where = file_.string();
    const std::size_t size = detail::file_size_of(file_);
    if (size < 8)
      throw load_error(where + ": " + std::to_string(size) +
                       " bytes, too short for a safetensors file (8-byte header length first)");
    const std::uint64_t n =
        detail::load_little_endian<std::uint64_t>(detail::read_bytes(file_, 0, 8).data());
    if (n > size - 8)
      throw load_error(where + ": truncated: the header length is " + std::to_string(n) +
                       " bytes, but only " + std::to_string(size - 8) + " bytes follow it");
    data_start_ = 8 + static_cast<std::size_t>(n);
    const std::size_t data_size = size - data_start_;
    const std::vector<unsigned char> raw =
        detail::read_bytes(file_, 8, static_cast<std::size_t>(n));
    nlohmann::json header;
    duplicate_keys duplicates;
    try {
      header = nlohmann::json::parse(raw.begin(), raw.end(), std::ref(duplicates));
    } catch (const nlohmann::json::exception& e) {
      throw load_error(where + ": malformed safetensors header (not valid JSON): " + e.what());
    }
    if (!duplicates.first.empty())
      throw load_error(where + ": malformed safetensors header: " + duplicates.first);
    if (!header.is_object())
      throw load_error(where + ": malformed safetensors header: expected a JSON object");
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object())
          throw load_error(where +
                           ": malformed safetensors header: '__metadata__' is not an object");
        for (const auto& [k, v] : value.items()) {
          // The format's metadata maps strings to strings (its reference implementation
          // refuses anything else); a value of another type was dropped silently before.
          if (!v.is_string()) {
            std::string what = where;
            what += ": malformed safetensors header: '__metadata__' value of ";
            what += detail::quote_text(k, 120);
            what += " is ";
            what += v.type_name();
            what += ", not a string";
            throw load_error(what);
          }
          metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      std::string what = where;
      what += ": tensor ";
      what += detail::quote_text(name, 120);
      entries_[name] = parse_entry(what, value, data_size);
    }
    check_coverage(where, data_size);
  }

  const std::filesystem::path& path() const noexcept { return file_; }
  std::string origin(const std::string&) const { return file_.string(); }
  bool contains(const std::string& name) const { return entries_.contains(name); }
  /// Every tensor's header entry, by name.
  const std::map<std::string, entry, std::less<>>& entries() const noexcept { return entries_; }
  /// The free-form "__metadata__" strings (e.g. {"format": "pt"}).
  const std::map<std::string, std::string, std::less<>>& metadata() const noexcept {
    return metadata_;
  }

  /// The tensor `name`, read from the file. load_error when it is missing or its dtype is not
  /// F32, F64, F16 or BF16.
  stored_tensor read(const std::string& name) const {
    const std::string where = file_.string() + ": tensor " + detail::quote_text(name, 120);
    const auto it = entries_.find(name);
    if (it == entries_.end()) throw load_error(where + " is missing: " + names_hint());
    const entry& e = it->second;
    const auto dtype = detail::safetensors_dtype(e.dtype);
    if (!dtype)
      throw load_error(where + ": dtype " + detail::quote_text(e.dtype) +
                       " is not supported: expected F32 or F64 "
                       "(F16 and BF16 are widened exactly)");
    stored_tensor t;
    t.name = name;
    t.origin = file_.string();
    t.dtype = *dtype;
    t.shape = e.shape;
    t.bytes = detail::read_bytes(file_, data_start_ + e.begin, e.end - e.begin);
    return t;
  }

 private:
  /// A JSON parser callback that notes the first key an object holds twice (nlohmann::json
  /// keeps the last value of such a key, silently): which tensor a name means, or which dtype
  /// a tensor has, would be a guess.
  struct duplicate_keys {
    std::string first;  // "tensor 'a' appears twice in the header", or empty
    std::vector<std::pair<std::string, std::set<std::string, std::less<>>>> objects;
    std::string last_key;

    bool operator()(int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using event_t = nlohmann::json::parse_event_t;
      if (event == event_t::object_start) {
        objects.emplace_back(objects.empty()      ? std::string("the header")
                             : objects.size() > 1 ? detail::quote_text(last_key, 120)
                             : last_key == "__metadata__"
                                 ? std::string("'__metadata__'")
                                 : "tensor " + detail::quote_text(last_key, 120),
                             std::set<std::string, std::less<>>{});
      } else if (event == event_t::object_end && !objects.empty()) {
        objects.pop_back();
      } else if (event == event_t::key && !objects.empty()) {
        last_key = parsed.get<std::string>();
        if (!objects.back().second.insert(last_key).second && first.empty())
          first = (objects.size() == 1 && last_key != "__metadata__"
                       ? "tensor " + detail::quote_text(last_key, 120)
                       : "key " + detail::quote_text(last_key, 120)) +
                  " appears twice in " + objects.back().first;
      }
      return true;
    }
  };

  /// Every byte of the data section belongs to exactly one tensor, as the format requires
  /// (and the reference implementation checks): no two tensors share bytes, and none lie
  /// between or after them. Tensors of no bytes may sit anywhere.
  void check_coverage(const std::string& where, std::size_t data_size) const {
    std::vector<std::pair<const std::string*, const entry*>> spans;
    for (const auto& [name, e] : entries_)
      if (e.end > e.begin) spans.emplace_back(&name, &e);
    std::sort(spans.begin(), spans.end(),
              [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
    const auto range = [](const entry& e) {
      return "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    };
    std::size_t covered = 0;  // the end of the bytes the tensors so far cover
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const auto& [name, e] = spans[i];
      if (i > 0 && e->begin < covered)
        throw load_error(where + ": malformed safetensors header: tensors " +
                         detail::quote_text(*spans[i - 1].first, 120) + " (data_offsets " +
                         range(*spans[i - 1].second) + ") and " + detail::quote_text(*name, 120) +
                         " (data_offsets " + range(*e) + ") share bytes");
      if (e->begin > covered)
        throw load_error(where + ": malformed safetensors header: bytes [" +
                         std::to_string(covered) + ", " + std::to_string(e->begin) +
                         ") of the data belong to no tensor (the format allows no gaps)");
      covered = e->end;
    }
    if (covered != data_size)
      throw load_error(where + ": malformed safetensors header: bytes [" + std::to_string(covered) +
                       ", " + std::to_string(data_size) +
                       ") at the end of the data belong to no tensor (the format allows no gaps)");
  }

  static entry parse_entry(const std::string& where, const nlohmann::json& v,
                           std::size_t data_size) {
    const auto bad = [&](const std::string& what) -> load_error {
      return load_error(where + ": malformed safetensors header entry: " + what);
    };
    if (!v.is_object()) throw bad("expected an object with dtype, shape and data_offsets");
    entry e;
    const auto dtype = v.find("dtype");
    if (dtype == v.end() || !dtype->is_string()) throw bad("'dtype' is missing or not a string");
    e.dtype = dtype->get<std::string>();
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array()) throw bad("'shape' is missing or not an array");
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned())
        throw bad("'shape' holds something other than a non-negative integer");
      e.shape.push_back(d.get<std::size_t>());
    }
    const auto offsets = v.find("data_offsets");
    if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      throw bad("'data_offsets' is missing or not two non-negative integers [begin, end]");
    e.begin = (*offsets)[0].get<std::size_t>();
    e.end = (*offsets)[1].get<std::size_t>();
    if (e.begin > e.end)
      throw bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                "] has begin > end");
    if (e.end > data_size)
      throw load_error(where + ": truncated: data_offsets [" + std::to_string(e.begin) + ", " +
                       std::to_string(e.end) + "] reach past the end of the data, which is " +
                       std::to_string(data_size) + " bytes long");
    if (const std::size_t elem = detail::safetensors_dtype_size(e.dtype); elem != 0) {
      const std::size_t need = detail::element_count(e.shape, elem, where) * elem;
      if (e.end - e.begin != need)
        throw bad("shape " + detail::shape_string(e.shape) + " of " + e.dtype + " needs " +
                  std::to_string(need) + " bytes, data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "] span " + std::to_string(e.end - e.begin));
    }
    return e;
  }

  std::string names_hint() const {
    std::string s = "the file holds " + std::to_string(entries_.size()) + " tensors";
    std::size_t shown = 0;
    for (const auto& [name, e] : entries_) {
      s += (shown ? ", " : ": ") + detail::quote_text(name, 120);
      if (++shown == 8) {
        if (entries_.size() > shown) s += ", ...";
        break;
      }
    }
    return s;
  }

  std::filesystem::path file_;
  std::size_t data_start_ = 0;
  std::map<std::string, entry, std::less<>> entries_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

}  // namespace argus
