// tests/support/golden.hpp: every golden case loads with the shapes its case.txt promises,
// torch's own float32 results pass the tolerance checks, and malformed copies of a case are
// rejected with a message that names the file and the problem.
// labels: memory
#include "support/golden.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using argus::test::golden_case;
using argus::test::golden_tensor;
using shape_t = std::vector<std::size_t>;

namespace {

void check_tensor(const golden_case& c, const std::string& name, const shape_t& shape,
                  const std::string& dtype) {
  BOOST_TEST_CONTEXT(c.name << ": tensor " << name) {
    BOOST_TEST_REQUIRE(c.has_tensor(name));
    const golden_tensor& t = c.tensor(name);
    BOOST_TEST(t.shape == shape, boost::test_tools::per_element());
    BOOST_TEST(t.dtype == dtype);
    BOOST_TEST(t.f32.size() == (dtype == "float32" ? t.size() : 0));
    BOOST_TEST(t.f64.size() == (dtype == "float64" ? t.size() : 0));
    BOOST_TEST(t.u8.size() == (dtype == "uint8" ? t.size() : 0));
  }
}

/// A scratch copy of one golden case, writable, removed at scope exit:
/// <tmp>/argus_golden_<random>/{index.txt, <case>/...}.
struct case_copy {
  fs::path root, dir;

  explicit case_copy(const std::string& name) {
    std::random_device rd;
    root =
        fs::temp_directory_path() / ("argus_golden_" + std::to_string(rd()) + std::to_string(rd()));
    dir = root / name;
    fs::create_directories(dir);
    for (const fs::directory_entry& e : fs::directory_iterator(argus::test::golden_dir() / name)) {
      const fs::path to = dir / e.path().filename();
      fs::copy_file(e.path(), to);  // the originals are read-only
      fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write);
    }
    std::ofstream(root / "index.txt") << name << '\n';
  }
  ~case_copy() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  case_copy(const case_copy&) = delete;
  case_copy& operator=(const case_copy&) = delete;

  /// Rewrites case.txt line by line: edit(line) returns the replacement ("" drops it).
  void edit_case_txt(const std::function<std::string(const std::string&)>& edit) const {
    std::ifstream in(dir / "case.txt");
    std::ostringstream out;
    for (std::string line; std::getline(in, line);)
      if (std::string l = edit(line); !l.empty()) out << l << '\n';
    in.close();
    std::ofstream(dir / "case.txt") << out.str();
  }
  void set_key(const std::string& key, const std::string& value) const {
    edit_case_txt([&](const std::string& line) {
      return line.starts_with(key + "=") ? key + "=" + value : line;
    });
  }
};

/// Runs load_golden_case(dir) and returns the message of the runtime_error it must throw.
std::string load_error(const fs::path& dir) {
  try {
    argus::test::load_golden_case(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  BOOST_FAIL("load_golden_case(" << dir << ") did not throw");
  return {};
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_case_loads_with_the_shapes_of_its_case_txt) {
  const std::vector<std::string> names = argus::test::golden_case_names();
  BOOST_TEST(names.size() == 9u);
  for (const std::string& name : names) {
    const golden_case c = argus::test::load_golden_case(name);
    BOOST_TEST_CONTEXT("case " << name) {
      BOOST_TEST(c.name == name);
      BOOST_TEST(c.heads % c.kv_heads == 0u);
      BOOST_TEST(c.scale == 1.0 / std::sqrt(static_cast<double>(c.d_k)),
                 boost::test_tools::tolerance(1e-6));
      BOOST_TEST(c.field("dtype") == "float32");

      const std::size_t b = c.batch, q = c.seq_q, kv = c.seq_kv, d = c.d_model, h = c.heads;
      check_tensor(c, "x_q", {b, q, d}, "float32");
      check_tensor(c, "x_k", {b, kv, c.kdim}, "float32");
      check_tensor(c, "x_v", {b, kv, c.vdim}, "float32");
      check_tensor(c, "W_q", {d, h * c.d_k}, "float32");
      check_tensor(c, "W_k", {c.kdim, c.kv_heads * c.d_k}, "float32");
      check_tensor(c, "W_v", {c.vdim, c.kv_heads * c.d_v}, "float32");
      check_tensor(c, "W_o", {h * c.d_v, d}, "float32");
      BOOST_TEST(c.has_tensor("b_q") == c.bias);
      if (c.bias) {
        check_tensor(c, "b_q", {h * c.d_k}, "float32");
        check_tensor(c, "b_k", {c.kv_heads * c.d_k}, "float32");
        check_tensor(c, "b_v", {c.kv_heads * c.d_v}, "float32");
        check_tensor(c, "b_o", {d}, "float32");
      }
      const bool padding = c.mask == "key_padding" || c.mask == "both";
      BOOST_TEST(c.has_tensor("key_padding_mask") == padding);
      if (padding) check_tensor(c, "key_padding_mask", {b, kv}, "uint8");
      check_tensor(c, "out", {b, q, d}, "float32");
      check_tensor(c, "out_f64", {b, q, d}, "float64");
      check_tensor(c, "attn", {b, h, q, kv}, "float32");
      check_tensor(c, "attn_f64", {b, h, q, kv}, "float64");
    }
  }
}

// torch's float32 results use at most 0.4% (out) and 3.4% (attn) of the tolerance (README).
BOOST_AUTO_TEST_CASE(torch_float32_results_are_within_tolerance) {
  for (const std::string& name : argus::test::golden_case_names()) {
    const golden_case c = argus::test::load_golden_case(name);
    const argus::test::tolerance_check out = argus::test::check_out(c, c.tensor("out").f32);
    const argus::test::tolerance_check attn = argus::test::check_attn(c, c.tensor("attn").f32);
    BOOST_TEST(out.ok(), name << " out: " << out);
    BOOST_TEST(out.max_fraction < 0.01, name << " out: " << out);
    BOOST_TEST(attn.ok(), name << " attn: " << attn);
    BOOST_TEST(attn.max_fraction < 0.1, name << " attn: " << attn);
  }
}

BOOST_AUTO_TEST_CASE(tolerance_checks_catch_errors) {
  const golden_case c = argus::test::load_golden_case("causal");
  const double ref = c.tensor("out_f64").f64[5];
  BOOST_TEST(
      argus::test::within_out_tolerance(c, ref + 0.5 * argus::test::out_tolerance(c, ref), ref));
  BOOST_TEST(
      !argus::test::within_out_tolerance(c, ref + 2 * argus::test::out_tolerance(c, ref), ref));
  BOOST_TEST(!argus::test::within_attn_tolerance(c, 0.5 + 2 * argus::test::attn_tolerance(c), 0.5));

  std::vector<float> out = c.tensor("out").f32;
  out[7] += 1e-2f;
  const argus::test::tolerance_check bad = argus::test::check_out(c, out);
  BOOST_TEST(!bad.ok());
  BOOST_TEST(bad.over == 1u);
  BOOST_TEST(bad.worst_index == 7u);
  out[7] = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(!argus::test::check_out(c, out).ok());

  // causal: attn[0][0][0][1] is masked, so its reference is 0 and it must be exactly 0.
  std::vector<float> attn = c.tensor("attn").f32;
  BOOST_TEST(c.tensor("attn_f64").f64[1] == 0.0);
  attn[1] = 1e-9f;  // well within tolerance, but masked
  const argus::test::tolerance_check masked = argus::test::check_attn(c, attn);
  BOOST_TEST(masked.over == 0u);
  BOOST_TEST(masked.masked_nonzero == 1u);
  BOOST_TEST(!masked.ok());

  BOOST_CHECK_THROW(argus::test::check_out(c, std::vector<float>(3)), std::invalid_argument);
  BOOST_CHECK_THROW(c.tensor("no_such_tensor"), std::out_of_range);
  try {
    (void)c.tensor("no_such_tensor");
  } catch (const std::out_of_range& e) {
    BOOST_TEST(contains(e.what(), "no_such_tensor"));
  }
}

BOOST_AUTO_TEST_CASE(truncated_bin_file_is_rejected) {
  const case_copy copy("tiny");  // W_q is (8, 8) float32: 256 bytes
  fs::resize_file(copy.dir / "W_q.bin", 252);
  const std::string what = load_error(copy.dir);
  BOOST_TEST(contains(what, "W_q.bin: 252 bytes, expected 256 = 8*8 float32"), what);
}

BOOST_AUTO_TEST_CASE(missing_bin_file_is_rejected) {
  const case_copy copy("tiny");
  fs::remove(copy.dir / "x_k.bin");
  const std::string what = load_error(copy.dir);
  BOOST_TEST(contains(what, "x_k.bin: missing file"), what);
}

BOOST_AUTO_TEST_CASE(missing_case_txt_is_rejected) {
  const case_copy copy("tiny");
  fs::remove(copy.dir / "case.txt");
  const std::string what = load_error(copy.dir);
  BOOST_TEST(contains(what, "case.txt: missing file"), what);
}

BOOST_AUTO_TEST_CASE(bad_numeric_field_is_rejected) {
  const case_copy copy("tiny");
  copy.set_key("heads", "two");
  std::string what = load_error(copy.dir);
  BOOST_TEST(contains(what, "case.txt: key 'heads': 'two' is not a non-negative integer"), what);

  copy.set_key("heads", "2");
  copy.set_key("max_abs_out", "0.8x");
  what = load_error(copy.dir);
  BOOST_TEST(contains(what, "case.txt: key 'max_abs_out': '0.8x' is not a finite number"), what);

  copy.set_key("max_abs_out", "0.826");
  copy.set_key("shape.W_q", "8,-8");
  what = load_error(copy.dir);
  BOOST_TEST(contains(what, "case.txt: key 'shape.W_q': '-8'"), what);
}

BOOST_AUTO_TEST_CASE(missing_key_and_unknown_dtype_are_rejected) {
  const case_copy copy("tiny");
  copy.edit_case_txt([](const std::string& l) { return l.starts_with("d_model=") ? "" : l; });
  std::string what = load_error(copy.dir);
  BOOST_TEST(contains(what, "case.txt: missing key 'd_model'"), what);

  const case_copy copy2("tiny");
  copy2.set_key("dtype.W_o", "float16");
  what = load_error(copy2.dir);
  BOOST_TEST(contains(what, "W_o.bin: unknown dtype 'float16'"), what);

  const case_copy copy3("tiny");
  copy3.edit_case_txt([](const std::string& l) { return l.starts_with("file.attn=") ? "" : l; });
  what = load_error(copy3.dir);
  BOOST_TEST(contains(what, "tensor 'attn' is listed in 'tensors' but has no key 'file.attn'"),
             what);
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_ignored_and_values_split_at_the_first_equals) {
  const case_copy copy("tiny");
  copy.edit_case_txt([](const std::string& l) {
    return l.starts_with("description=") ? "description=a=b, c=d\nfuture.key=1=2" : l;
  });
  const golden_case c = argus::test::load_golden_case(copy.dir);
  BOOST_TEST(c.field("description") == "a=b, c=d");
  BOOST_TEST(c.field("future.key") == "1=2");
  BOOST_TEST(c.heads == 2u);
}

BOOST_AUTO_TEST_CASE(environment_overrides_the_golden_dir) {
  const case_copy copy("tiny");
  const char* old = std::getenv("ARGUS_GOLDEN_DIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("ARGUS_GOLDEN_DIR", copy.root.c_str(), 1);
  BOOST_TEST(argus::test::golden_dir() == copy.root);
  BOOST_TEST(argus::test::golden_case_names() == std::vector<std::string>{"tiny"},
             boost::test_tools::per_element());
  BOOST_TEST(argus::test::load_golden_case("tiny").dir == copy.dir);

  ::setenv("ARGUS_GOLDEN_DIR", (copy.root / "nowhere").c_str(), 1);
  try {
    (void)argus::test::golden_dir();
    BOOST_FAIL("golden_dir() accepted a directory without index.txt");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(contains(e.what(), "nowhere/index.txt does not exist"), e.what());
  }

  if (old != nullptr)
    ::setenv("ARGUS_GOLDEN_DIR", saved.c_str(), 1);
  else
    ::unsetenv("ARGUS_GOLDEN_DIR");
}
