// argus/io/npy.hpp and argus/io/safetensors.hpp: files written here (tests/support/
// tensor_files.hpp) read back exactly, in every accepted dtype and version; broken, truncated
// and unsupported files throw load_error naming the file, the tensor and the problem.
// labels: memory
#include "support/tensor_files.hpp"

#include "support/messages.hpp"
#include <argus/io/npy.hpp>
#include <argus/io/safetensors.hpp>

#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using argus::load_error;
using argus::stored_dtype;
using namespace argus::test;

namespace {

/// Runs f, which must throw load_error whose message contains every one of `parts`.
void expect_load_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  BOOST_TEST(argus::test::throws_naming<load_error>(f, parts));
}

std::vector<float> iota_values(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * (float(i) - float(n) / 3);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(npy_round_trips_every_accepted_dtype_version_and_rank) {
  scratch_directory dir("npy-ok");
  const std::vector<float> v = iota_values(6, 0.25f);
  for (unsigned major : {1u, 2u, 3u}) {
    // Appends, not "v" + std::string: GCC 12 at -O3 warns (-Wstringop-overflow, a false
    // positive of its libstdc++, bug 105651) on a literal before a temporary string.
    const std::string stem = std::string("v").append(std::to_string(major));
    const fs::path f = dir.path() / (stem + ".npy");
    write_npy(f, npy("<f4", {2, 3}, f32_bytes(v), false, major));
    const argus::stored_tensor t = argus::read_npy(f);
    BOOST_TEST(t.name == stem);
    BOOST_TEST((t.dtype == stored_dtype::float32));
    BOOST_TEST((t.shape == std::vector<std::size_t>{2, 3}));
    const auto back = t.values<float>();
    BOOST_TEST(back == v, boost::test_tools::per_element());
    const auto as_double = t.values<double>();
    for (std::size_t i = 0; i < v.size(); ++i) BOOST_TEST(as_double[i] == double(v[i]));
  }
  const std::vector<double> d = {1.0 / 3, -2.5, 1e-300};
  write_npy(dir.path() / "d.npy", npy("<f8", {3}, f64_bytes(d)));
  BOOST_TEST(argus::read_npy(dir.path() / "d.npy").values<double>() == d,
             boost::test_tools::per_element());
  // float16: 1.0 (0x3c00), -2.0 (0xc000), the smallest subnormal 2^-24 (0x0001), 65504 (0x7bff)
  write_npy(dir.path() / "h.npy",
            npy("<f2", {4}, {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b}));
  const auto h = argus::read_npy(dir.path() / "h.npy").values<float>();
  BOOST_TEST(h[0] == 1.0f);
  BOOST_TEST(h[1] == -2.0f);
  BOOST_TEST(h[2] == std::ldexp(1.0f, -24));
  BOOST_TEST(h[3] == 65504.0f);
  write_npy(dir.path() / "s.npy", npy("<f4", {}, f32_bytes({7.5f})));
  const argus::stored_tensor s = argus::read_npy(dir.path() / "s.npy");
  BOOST_TEST(s.shape.empty());
  BOOST_TEST(s.values<float>().at(0) == 7.5f);
}

BOOST_AUTO_TEST_CASE(npy_rejects_what_it_cannot_read_exactly) {
  scratch_directory dir("npy-bad");
  const fs::path f = dir.path() / "w.npy";
  const bytes data = f32_bytes(iota_values(6, 1));
  const auto read = [&] { (void)argus::read_npy(f); };

  write_npy(f, npy("<f4", {2, 3}, data, true));
  expect_load_error(read, {f.string(), "'w'", "Fortran", "C order"});
  write_npy(f, npy(">f4", {2, 3}, data));
  expect_load_error(read, {f.string(), "'>f4'", "little-endian"});
  write_npy(f, npy("<i8", {3}, data));
  expect_load_error(read, {"'<i8'", "not supported"});

  bytes full = npy_bytes(npy("<f4", {2, 3}, data));
  write_file(f, bytes(full.begin(), full.end() - 1));
  expect_load_error(read, {f.string(), "truncated", "(2, 3)", "24 bytes", "23"});
  bytes longer = full;
  longer.push_back(0);
  write_file(f, longer);
  expect_load_error(read, {"trailing bytes", "25"});
  write_file(f, bytes(full.begin(), full.begin() + 40));
  expect_load_error(read, {"truncated", "header"});
  write_file(f, bytes(full.begin(), full.begin() + 5));
  expect_load_error(read, {"too short"});
  // Versions 2.0 and 3.0 have a 12-byte preamble: cut short in it, the file is truncated (not
  // of an unsupported version).
  for (const unsigned version : {2u, 3u}) {
    const bytes v = npy_bytes(npy("<f4", {2, 3}, data, false, version));
    write_file(f, bytes(v.begin(), v.begin() + 11));
    expect_load_error(
        read, {f.string(), "truncated", "11 bytes", "version " + std::to_string(version) + ".x"});
  }
  bytes wrong_magic = full;
  wrong_magic[1] = 'X';
  write_file(f, wrong_magic);
  expect_load_error(read, {"not a .npy file"});
  write_npy(f, npy("<f4", {2, 3}, data, false, 4));
  expect_load_error(read, {"version 4.0"});

  const std::vector<std::pair<std::string, std::string>> headers = {
      {"{'descr': '<f4', 'shape': (2, 3), }", "lacks the key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}",
       "unknown key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", "non-integer"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", "neither True nor False"},
      {"{'descr': '<f4 , 'fortran_order': False, 'shape': (2, 3)}", "malformed"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 3), }",
       "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
       "too large"},
      // numpy takes nothing after the dict but the padding; this loaded before
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } GARBAGE",
       "text after the closing '}': 'GARBAGE"},
  };
  for (const auto& [header, message] : headers) {
    write_npy(f, npy("<f4", {2, 3}, data, false, 1, header));
    expect_load_error(read, {f.string(), message});
  }

  write_npy(f, npy("<f8", {2}, f64_bytes({1, 2})));
  expect_load_error([&] { (void)argus::read_npy(f).values<float>(); },
                    {"'w'", "float64", "double"});
}

BOOST_AUTO_TEST_CASE(npy_directory_is_a_tensor_source) {
  static_assert(argus::TensorSource<argus::npy_directory>);
  scratch_directory dir("npy-dir");
  write_npy(dir.path() / "out_proj.weight.npy", npy("<f4", {2}, f32_bytes({1, 2})));
  const argus::npy_directory src(dir.path());
  BOOST_TEST(src.contains("out_proj.weight"));
  BOOST_TEST(!src.contains("out_proj.bias"));
  BOOST_TEST(src.read("out_proj.weight").values<float>().at(1) == 2.0f);
  expect_load_error([&] { (void)src.read("out_proj.bias"); },
                    {(dir.path() / "out_proj.bias.npy").string(), "missing tensor 'out_proj.bias'",
                     "(no such file)"});
  fs::create_directory(dir.path() / "in_proj_bias.npy");  // there, but not a file
  expect_load_error([&] { (void)src.read("in_proj_bias"); },
                    {"missing tensor 'in_proj_bias' (not a regular file)"});
  expect_load_error([&] { argus::npy_directory d(dir.path() / "nowhere"); },
                    {"nowhere", "no such directory"});
}

BOOST_AUTO_TEST_CASE(safetensors_round_trips_and_widens_half_precision_exactly) {
  static_assert(argus::TensorSource<argus::safetensors_file>);
  scratch_directory dir("st-ok");
  const fs::path f = dir.path() / "m.safetensors";
  const std::vector<float> v = iota_values(12, 0.5f);
  const std::vector<double> d = {std::numeric_limits<double>::min(), -1.0 / 7};
  const std::vector<float> bf = {1.0f, -0.15625f,
                                 3.0e38f};  // exact in bfloat16 (3.0e38f rounded below)
  write_safetensors(f, {{"a", "F32", {3, 4}, f32_bytes(v)},
                        {"b", "F64", {2}, f64_bytes(d)},
                        {"c", "BF16", {3}, bf16_bytes(bf)},
                        {"h", "F16", {1}, {0x00, 0xbc}},
                        {"ids", "I64", {2}, bytes(16, 0)},
                        {"flags", "BOOL", {3}, bytes(3, 1)},
                        {"empty", "F32", {0, 4}, {}}});
  const argus::safetensors_file st(f);
  BOOST_TEST(st.entries().size() == 7u);
  BOOST_TEST(st.metadata().at("format") == "pt");
  BOOST_TEST(st.read("a").values<float>() == v, boost::test_tools::per_element());
  BOOST_TEST((st.read("a").shape == std::vector<std::size_t>{3, 4}));
  BOOST_TEST(st.read("b").values<double>() == d, boost::test_tools::per_element());
  const auto c = st.read("c").values<float>();
  BOOST_TEST(c[0] == 1.0f);
  BOOST_TEST(c[1] == -0.15625f);
  BOOST_TEST(c[2] == std::bit_cast<float>(std::bit_cast<std::uint32_t>(3.0e38f) & 0xffff0000u));
  BOOST_TEST(st.read("h").values<double>().at(0) == -1.0);
  BOOST_TEST(st.read("empty").values<float>().empty());
  expect_load_error([&] { (void)st.read("ids"); },
                    {f.string(), "'ids'", "dtype 'I64' is not supported"});
  expect_load_error([&] { (void)st.read("nope"); }, {f.string(), "'nope' is missing", "'a'"});
  expect_load_error([&] { (void)st.read("b").values<float>(); }, {"'b' is float64"});
}

BOOST_AUTO_TEST_CASE(safetensors_rejects_malformed_and_truncated_files) {
  scratch_directory dir("st-bad");
  const fs::path f = dir.path() / "m.safetensors";
  const auto open = [&] { argus::safetensors_file st(f); };
  const std::vector<safetensors_entry> good = {{"a", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
                                               {"b", "F32", {2}, f32_bytes({5, 6})}};
  const bytes full = safetensors_bytes(good);

  write_file(f, bytes(full.begin(), full.end() - 1));  // the last tensor's data cut short
  expect_load_error(open, {f.string(), "tensor 'b'", "truncated", "past the end"});
  write_file(f, bytes(full.begin(), full.begin() + 20));  // cut inside the header
  expect_load_error(open, {f.string(), "truncated", "header length"});
  write_file(f, bytes(full.begin(), full.begin() + 5));
  expect_load_error(open, {"too short"});
  expect_load_error([&] { argus::safetensors_file st(dir.path() / "absent.safetensors"); },
                    {"absent.safetensors", "no such file"});

  const std::vector<std::pair<std::string, std::vector<std::string>>> headers = {
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]",
       {"not valid JSON"}},
      {"[1, 2]", {"expected a JSON object"}},
      {"{\"a\": {\"shape\": [2, 2], \"data_offsets\": [0, 16]}}",
       {"tensor 'a'", "'dtype' is missing"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, -2], \"data_offsets\": [0, 16]}}", {"'shape'"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0]}}",
       {"'data_offsets'"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [16, 0]}}",
       {"begin > end"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 16]}}",
       {"tensor 'a'", "(2, 3)", "needs 24 bytes", "span 16"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 100]}}",
       {"past the end", "24 bytes"}},
      {"{\"__metadata__\": [1], \"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": "
       "[0, 16]}}",
       {"'__metadata__'"}},
      // string to string, as the format's reference implementation reads it (a number was
      // dropped silently before)
      {"{\"__metadata__\": {\"format\": \"pt\", \"n\": 3}, \"a\": {\"dtype\": \"F32\", "
       "\"shape\": [2, 2], \"data_offsets\": [0, 16]}}",
       {"'__metadata__' value of 'n' is number, not a string"}},
  };
  for (const auto& [header, parts] : headers) {
    write_safetensors(f, good, header);
    expect_load_error(open, parts);
  }
  // Headers that parse into something readable but say two things at once, or leave bytes
  // unaccounted for: refused, as the format (and its reference implementation) requires.
  const std::string a = "\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}";
  const std::string b = "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [16, 24]}";
  const std::vector<std::pair<std::string, std::vector<std::string>>> ambiguous = {
      // the same name twice (JSON parsers keep one of them silently)
      {"{" + a + ", " + b +
           ", \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
       {f.string(), "tensor 'b' appears twice in the header"}},
      {"{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F16\", \"shape\": [2, 2], "
       "\"data_offsets\": [0, 16]}, " +
           b + "}",
       {"key 'dtype' appears twice in tensor 'a'"}},
      {"{\"__metadata__\": {\"format\": \"pt\", \"format\": \"np\"}, " + a + ", " + b + "}",
       {"key 'format' appears twice in '__metadata__'"}},
      // two tensors on the same bytes; a gap between tensors; bytes after the last one
      {"{" + a + ", \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}",
       {"tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [8, 16]) share bytes"}},
      {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [8, 24]}, "
       "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
       {"bytes [4, 8) of the data belong to no tensor", "no gaps"}},
      {"{" + a + "}", {"bytes [16, 24) at the end of the data belong to no tensor"}},
  };
  for (const auto& [header, parts] : ambiguous) {
    write_safetensors(f, good, header);
    expect_load_error(open, parts);
  }
  // Empty tensors cover no bytes and may sit anywhere; keys are per object, so a tensor may
  // be called "dtype".
  write_safetensors(f, good,
                    "{" + a + ", " + b +
                        ", \"dtype\": {\"dtype\": \"F32\", \"shape\": [0, 3], "
                        "\"data_offsets\": [16, 16]}}");
  BOOST_TEST(argus::safetensors_file(f).read("dtype").shape == (std::vector<std::size_t>{0, 3}));
  // An unknown dtype cannot be size-checked: opening works, reading names the dtype.
  write_safetensors(
      f, good,
      "{\"a\": {\"dtype\": \"F4_NEW\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}, "
      "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [16, 24]}}");
  const argus::safetensors_file st(f);
  expect_load_error([&] { (void)st.read("a"); }, {"dtype 'F4_NEW' is not supported"});
}

// What a file says is quoted in a message as detail::quote_text shows it: bytes outside printable
// ASCII as \xNN (an escape sequence in a key, a name or a dtype reached the terminal raw), and
// a bounded part of it (a header of 100 kB was echoed whole, twice).
BOOST_AUTO_TEST_CASE(messages_quote_what_the_files_say) {
  scratch_directory dir("quoted");
  const auto message_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const load_error& e) {
      return e.what();
    }
    return "(nothing thrown)";
  };
  const auto printable = [](const std::string& s) {
    for (const char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F)
        return false;
    return true;
  };
  const std::vector<unsigned char> data = f32_bytes(iota_values(6, 0.5f));

  const fs::path f = dir.path() / "w.npy";
  const auto read = [&] { (void)argus::read_npy(f); };
  write_npy(f, npy("<f4", {2, 3}, data, false, 1,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), '\x1b[2J': 1}"));
  std::string what = message_of(read);
  BOOST_TEST(message_names(what, {"unknown key '\\x1b[2J'", "(header: \"{'descr': '<f4'"}));
  BOOST_TEST(printable(what), what);

  write_npy(f, npy("<f4", {2, 3}, data, false, 2,  // version 2: a header over 64 kB
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } " +
                       std::string(100000, 'A')));
  what = message_of(read);
  BOOST_TEST(message_names(what, {"text after the closing '}': 'AAAA", "...'"}));
  BOOST_TEST(what.size() < 600u, what.size());  // 100 kB of header, quoted in part

  write_npy(f, npy("<f4", {2, 3}, data, false, 1,
                   "{'descr': '<f4\x7f', 'fortran_order': False, 'shape': (2, 3), }"));
  what = message_of(read);
  BOOST_TEST(message_names(what, {"dtype '<f4\\x7f' is not supported"}));
  BOOST_TEST(printable(what), what);

  const fs::path g = dir.path() / "m.safetensors";
  const std::vector<safetensors_entry> one = {{"a", "F32", {2}, f32_bytes({1, 2})}};
  write_safetensors(g, one,
                    "{\"a\\u001b[2J\": {\"dtype\": \"F32\", \"shape\": [3], "
                    "\"data_offsets\": [0, 8]}}");
  what = message_of([&] { argus::safetensors_file st(g); });
  BOOST_TEST(message_names(what, {"tensor 'a\\x1b[2J'", "needs 12 bytes"}));
  BOOST_TEST(printable(what), what);

  write_safetensors(g, one,
                    "{\"a\\u0007\": {\"dtype\": \"F\\u001b32\", \"shape\": [2], "
                    "\"data_offsets\": [0, 8]}}");
  const argus::safetensors_file st(g);
  what = message_of([&] { (void)st.read("b"); });  // missing: the names it holds, quoted
  BOOST_TEST(message_names(what, {"tensor 'b' is missing", "1 tensors: 'a\\x07'"}));
  BOOST_TEST(printable(what), what);
  what = message_of([&] { (void)st.read("a\x07"); });
  BOOST_TEST(message_names(what, {"tensor 'a\\x07'", "dtype 'F\\x1b32' is not supported"}));
  BOOST_TEST(printable(what), what);
}
