// argus/io/pytorch_mha.hpp: every ../shared/golden case, re-exported as nn.MultiheadAttention's
// state dict (transposed weights, packed in_proj_weight, or q/k/v_proj_weight when kdim/vdim
// differ) to safetensors and to a directory of .npy files, loads into its typed module and
// reproduces the golden outputs within the README's tolerances; a missing tensor, a wrong
// shape or dtype, a bias the module lacks and the other misfits throw load_error naming the
// file, the tensor and what was expected, and leave the target module as it was.
// labels: memory
#include "support/golden_mha.hpp"
#include "support/messages.hpp"
#include "support/tensor_files.hpp"
#include <argus/argus.hpp>
#include <argus/io/npy.hpp>
#include <argus/io/pytorch_mha.hpp>
#include <argus/io/safetensors.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using argus::load_error;
using namespace argus::test;

namespace {

void expect_load_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  BOOST_TEST(argus::test::throws_naming<load_error>(f, parts));
}

/// The transpose of a row-major (rows, cols) matrix.
std::vector<float> transposed(const std::vector<float>& m, std::size_t rows, std::size_t cols) {
  std::vector<float> t(m.size());
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
  return t;
}

std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// A golden case's weights as torch's state dict (name, shape, float32 values), under prefix.
std::vector<safetensors_entry> torch_state_dict(const golden_case& c,
                                                const std::string& prefix = "") {
  const std::size_t e = c.d_model, q = c.heads * c.d_k, k = c.kv_heads * c.d_k,
                    v = c.kv_heads * c.d_v;
  const auto& w_q = c.tensor("W_q").f32;
  const auto& w_k = c.tensor("W_k").f32;
  const auto& w_v = c.tensor("W_v").f32;
  std::vector<safetensors_entry> sd;
  const auto add = [&](const std::string& name, std::vector<std::size_t> shape,
                       const std::vector<float>& values) {
    sd.push_back({prefix + name, "F32", std::move(shape), f32_bytes(values)});
  };
  if (c.kdim == e && c.vdim == e) {
    add("in_proj_weight", {q + k + v, e},
        concat({transposed(w_q, e, q), transposed(w_k, e, k), transposed(w_v, e, v)}));
  } else {
    add("q_proj_weight", {q, e}, transposed(w_q, e, q));
    add("k_proj_weight", {k, c.kdim}, transposed(w_k, c.kdim, k));
    add("v_proj_weight", {v, c.vdim}, transposed(w_v, c.vdim, v));
  }
  if (c.bias)
    add("in_proj_bias", {q + k + v},
        concat({c.tensor("b_q").f32, c.tensor("b_k").f32, c.tensor("b_v").f32}));
  add("out_proj.weight", {e, c.heads * c.d_v}, transposed(c.tensor("W_o").f32, c.heads * c.d_v, e));
  if (c.bias) add("out_proj.bias", {e}, c.tensor("b_o").f32);
  return sd;
}

void write_npy_directory(const fs::path& dir, const std::vector<safetensors_entry>& sd) {
  fs::create_directories(dir);
  for (const safetensors_entry& t : sd)
    write_npy(dir / (t.name + ".npy"), npy("<f4", t.shape, t.data));
}

template <class M>
void check_same_weights(const M& m, const golden_case& c) {
  const auto same = [&](const auto& t, const char* name) {
    const auto& ref = c.tensor(name).f32;
    BOOST_TEST_REQUIRE(t.size() == ref.size());
    BOOST_TEST(std::equal(t.begin(), t.end(), ref.begin()),
               c.name << ": " << name << " loaded exactly");
  };
  same(m.w_q, "W_q");
  same(m.w_k, "W_k");
  same(m.w_v, "W_v");
  same(m.w_o, "W_o");
  if constexpr (M::has_bias) {
    same(m.b_q, "b_q");
    same(m.b_k, "b_k");
    same(m.b_v, "b_v");
    same(m.b_o, "b_o");
  }
}

/// The loaded module's output and attention weights against the golden float64 truth.
template <class Case, class M>
void check_reproduces_golden(const M& mha, const golden_case& c, const char* source) {
  using namespace argus;
  tensor<float, shape<batch<>, seq<>, model<M::d_model>>> x_q(c.batch,
                                                              c.seq_q);         // (B,SEQ_Q,D_MODEL)
  tensor<float, shape<batch<>, seq<>, model<M::kdim>>> x_k(c.batch, c.seq_kv);  // (B,SEQ_KV,KDIM)
  tensor<float, shape<batch<>, seq<>, model<M::vdim>>> x_v(c.batch, c.seq_kv);  // (B,SEQ_KV,VDIM)
  fill_from(x_q, c.tensor("x_q"));
  fill_from(x_k, c.tensor("x_k"));
  fill_from(x_v, c.tensor("x_v"));
  tensor<std::uint8_t, shape<batch<>, seq<>>> padding(c.batch, c.seq_kv);  // (B,SEQ_KV)
  if (c.has_tensor("key_padding_mask"))
    std::ranges::copy(c.tensor("key_padding_mask").u8, padding.data());
  const auto check = [&](const auto& y) {
    const tolerance_check o = check_out(c, evaluate(y, fused));
    BOOST_TEST(o.ok(), c.name << " out, loaded from " << source << ": " << o);
    const tolerance_check a = check_attn(c, evaluate(attention_weights(y), fused));
    BOOST_TEST(a.ok(), c.name << " attn, loaded from " << source << ": " << a);
  };
  if constexpr (Case::mask == golden_mask::none) check(mha.forward(x_q, x_k, x_v));
  if constexpr (Case::mask == golden_mask::causal) check(mha.forward(x_q, x_k, x_v, causal));
  if constexpr (Case::mask == golden_mask::key_padding)
    check(mha.forward(x_q, x_k, x_v, ignore_keys(padding)));
  if constexpr (Case::mask == golden_mask::both)
    check(mha.forward(x_q, x_k, x_v, causal, ignore_keys(padding)));
}

// A small module and its state dict, for the failure cases.
using small_mha = argus::multi_head_attention<16, 4>;  // d_k = d_v = 4

std::vector<safetensors_entry> small_state_dict(const std::string& dtype = "F32") {
  std::vector<safetensors_entry> sd;
  const auto add = [&](const std::string& name, std::vector<std::size_t> shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = float(i % 7) * 0.125f - 0.25f;
    std::vector<double> vd(v.begin(), v.end());
    sd.push_back({name, dtype, std::move(shape),
                  dtype == "F64"    ? f64_bytes(vd)
                  : dtype == "BF16" ? bf16_bytes(v)
                                    : f32_bytes(v)});
  };
  add("in_proj_weight", {48, 16});
  add("in_proj_bias", {48});
  add("out_proj.weight", {16, 16});
  add("out_proj.bias", {16});
  return sd;
}

std::vector<safetensors_entry> without(std::vector<safetensors_entry> sd, const std::string& name) {
  std::erase_if(sd, [&](const safetensors_entry& e) { return e.name == name; });
  return sd;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(golden_cases_load_from_torch_layout_and_reproduce, Case,
                              golden_cases) {
  const golden_case c = load_golden_case(Case::name);
  using M = argus::multi_head_attention<Case::d_model, Case::heads, Case::options, float>;
  scratch_directory dir(std::string("golden-") + Case::name);
  const auto sd = torch_state_dict(c);

  write_safetensors(dir.path() / "mha.safetensors", sd);
  const M from_st =
      argus::load_pytorch_mha<M>(argus::safetensors_file(dir.path() / "mha.safetensors"));
  check_same_weights(from_st, c);
  check_reproduces_golden<Case>(from_st, c, "safetensors");

  write_npy_directory(dir.path() / "npy", sd);
  const M from_npy = argus::load_pytorch_mha<M>(argus::npy_directory(dir.path() / "npy"));
  check_same_weights(from_npy, c);
  check_reproduces_golden<Case>(from_npy, c, "npy");

  // Inside a bigger model: keys under a prefix, next to tensors of other dtypes.
  auto model = torch_state_dict(c, "encoder.layers.0.self_attn.");
  model.push_back({"encoder.layers.0.step", "I64", {1}, bytes(8, 0)});
  write_safetensors(dir.path() / "model.safetensors", model);
  const argus::safetensors_file f(dir.path() / "model.safetensors");
  check_same_weights(argus::load_pytorch_mha<M>(f, "encoder.layers.0.self_attn"), c);
  check_same_weights(argus::load_pytorch_mha<M>(f, "encoder.layers.0.self_attn."), c);
}

BOOST_AUTO_TEST_CASE(dtypes_convert_exactly_or_are_rejected) {
  scratch_directory dir("mha-dtypes");
  const fs::path f = dir.path() / "m.safetensors";
  write_safetensors(f, small_state_dict("F64"));
  const auto d =
      argus::load_pytorch_mha<argus::multi_head_attention<16, 4, argus::mha_options{}, double>>(
          argus::safetensors_file(f));
  // value index i holds (i % 7) / 8 - 1/4; W_q(3, 1) = in_proj_weight[1][3] (index 19),
  // W_o(1, 2) = out_proj.weight[2][1] (index 33), b_o(3) = out_proj.bias[3].
  BOOST_TEST(d.w_q(3, 1) == 0.375);
  BOOST_TEST(d.w_o(1, 2) == 0.375);
  BOOST_TEST(d.b_o(3) == 0.125);
  expect_load_error([&] { (void)argus::load_pytorch_mha<small_mha>(argus::safetensors_file(f)); },
                    {f.string(), "'in_proj_weight' is float64", "module holds float"});
  write_safetensors(f, small_state_dict("BF16"));
  const small_mha b = argus::load_pytorch_mha<small_mha>(argus::safetensors_file(f));
  BOOST_TEST(b.w_q(3, 1) == 0.375f);
  BOOST_TEST(b.w_k(2, 1) == -0.125f);  // in_proj_weight[16 + 1][2], index 274
  BOOST_TEST(b.b_o(3) == 0.125f);
  write_safetensors(f, small_state_dict("I32"));
  expect_load_error([&] { (void)argus::load_pytorch_mha<small_mha>(argus::safetensors_file(f)); },
                    {"'in_proj_weight'", "dtype 'I32' is not supported"});
}

BOOST_AUTO_TEST_CASE(misfits_name_file_tensor_and_expectation_and_load_nothing) {
  scratch_directory dir("mha-bad");
  const fs::path f = dir.path() / "m.safetensors";
  small_mha target;
  target.w_q.fill(9.0f);
  target.b_o.fill(9.0f);
  const auto load = [&] {
    target = argus::load_pytorch_mha<small_mha>(argus::safetensors_file(f));
  };

  write_safetensors(f, without(small_state_dict(), "out_proj.bias"));
  expect_load_error(load,
                    {f.string(), "missing tensor 'out_proj.bias'", "(16,)", "d_model 16, heads 4"});
  write_safetensors(f, without(small_state_dict(), "in_proj_weight"));
  expect_load_error(load, {"missing tensor 'in_proj_weight'", "q_proj_weight"});

  auto wrong = small_state_dict();
  wrong[0] = {"in_proj_weight", "F32", {48, 12}, f32_bytes(std::vector<float>(48 * 12))};
  write_safetensors(f, wrong);
  expect_load_error(load, {f.string(), "'in_proj_weight' has shape (48, 12), expected (48, 16)"});
  wrong = small_state_dict();
  wrong[3] = {"out_proj.bias", "F32", {12}, f32_bytes(std::vector<float>(12))};
  write_safetensors(f, wrong);
  expect_load_error(load, {"'out_proj.bias' has shape (12,), expected (16,)"});

  auto extra = small_state_dict();
  extra.push_back({"q_proj_weight", "F32", {16, 16}, f32_bytes(std::vector<float>(256))});
  write_safetensors(f, extra);
  expect_load_error(load, {"both 'in_proj_weight' and separate"});
  extra = small_state_dict();
  extra.push_back({"bias_k", "F32", {1, 1, 16}, f32_bytes(std::vector<float>(16))});
  write_safetensors(f, extra);
  expect_load_error(load, {"'bias_k'", "add_bias_kv"});

  // Every failure above left the target as it was: nothing is half-loaded.
  BOOST_TEST(std::ranges::all_of(target.w_q, [](float v) { return v == 9.0f; }));
  BOOST_TEST(std::ranges::all_of(target.b_o, [](float v) { return v == 9.0f; }));
  BOOST_TEST(std::ranges::all_of(target.w_o, [](float v) { return v == 0.0f; }));

  write_safetensors(f, small_state_dict());
  using no_bias = argus::multi_head_attention<16, 4, argus::mha_options{.bias = false}>;
  expect_load_error([&] { (void)argus::load_pytorch_mha<no_bias>(argus::safetensors_file(f)); },
                    {"'in_proj_bias' is a bias", "without biases"});
  (void)argus::load_pytorch_mha<no_bias>(argus::safetensors_file(
      (write_safetensors(f, without(without(small_state_dict(), "in_proj_bias"), "out_proj.bias")),
       f)));

  write_safetensors(f, small_state_dict());
  using cross = argus::multi_head_attention<16, 4, argus::mha_options{.kdim = 12, .vdim = 20}>;
  expect_load_error([&] { (void)argus::load_pytorch_mha<cross>(argus::safetensors_file(f)); },
                    {"packed projection", "kdim 12", "'k_proj_weight'"});

  write_npy_directory(dir.path() / "npy", without(small_state_dict(), "out_proj.weight"));
  expect_load_error(
      [&] { (void)argus::load_pytorch_mha<small_mha>(argus::npy_directory(dir.path() / "npy")); },
      {(dir.path() / "npy" / "out_proj.weight.npy").string(), "missing tensor 'out_proj.weight'",
       "(16, 16)"});
}
