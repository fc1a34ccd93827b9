// 10_load_pytorch_weights -- a PyTorch nn.MultiheadAttention's weights in a typed module
// (argus/io/, optional).
//
//     10_load_pytorch_weights [directory for the file it writes, default .]
//
// It stands in for the Python side first: it writes mha.safetensors as
// safetensors.torch.save_file(nn.MultiheadAttention(16, 4).state_dict(), ...) would, with
// weights in torch's x·Wᵀ layout (in_proj_weight (48, 16) = [W_qᵀ; W_kᵀ; W_vᵀ], ...). Then
// it loads the file into multi_head_attention<16, 4>, runs it, and compares the output with
// torch's formula computed here in plain loops (x·Wᵀ + b, per head, softmax, out_proj).
// Last, it loads the same file into modules it does not fit and prints the errors.
// docs/how-to/load_pytorch_weights.md quotes it. Exit status 1 if a check fails.
#include <argus/argus.hpp>
#include <argus/io/npy.hpp>
#include <argus/io/pytorch_mha.hpp>
#include <argus/io/safetensors.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

constexpr std::size_t e = 16, h = 4, dk = e / h, n = 5;

using state_dict = std::map<std::string, std::pair<std::vector<std::size_t>, std::vector<float>>>;

/// A state dict in torch's layout, with deterministic values.
state_dict make_state_dict() {
  state_dict sd;
  std::uint32_t s = 12345;
  const auto next = [&] {
    return float((s = s * 1664525u + 1013904223u) >> 8) / float(1u << 24) - 0.5f;
  };
  const auto add = [&](const std::string& name, std::vector<std::size_t> shape) {
    std::size_t count = 1;
    for (std::size_t d : shape) count *= d;
    std::vector<float> v(count);
    for (float& x : v) x = next();
    sd[name] = {std::move(shape), std::move(v)};
  };
  add("in_proj_weight", {3 * e, e});
  add("in_proj_bias", {3 * e});
  add("out_proj.weight", {e, e});
  add("out_proj.bias", {e});
  return sd;
}

/// What safetensors.torch.save_file writes: 8-byte header length, JSON header, data.
void save_safetensors(const std::filesystem::path& file, const state_dict& sd) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const auto& [name, t] : sd) {
    const std::size_t begin = data.size();
    for (float v : t.second)
      for (int b = 0; b < 4; ++b) data += char(std::bit_cast<std::uint32_t>(v) >> (8 * b));
    header[name] = {{"dtype", "F32"}, {"shape", t.first}, {"data_offsets", {begin, data.size()}}};
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::ofstream out(file, std::ios::binary);
  for (int b = 0; b < 8; ++b) out.put(char(std::uint64_t(json.size()) >> (8 * b)));
  out << json << data;
}

/// torch's forward for one sequence, in plain loops and torch's own layout:
/// y = softmax((x·Wqᵀ + bq)_h (x·Wkᵀ + bk)_hᵀ / sqrt(dk)) (x·Wvᵀ + bv)_h, concatenated, ·Woᵀ + bo.
std::vector<double> torch_forward(const state_dict& sd, const std::vector<float>& x) {
  const auto& w = sd.at("in_proj_weight").second;
  const auto& b = sd.at("in_proj_bias").second;
  const auto& wo = sd.at("out_proj.weight").second;
  const auto& bo = sd.at("out_proj.bias").second;
  std::vector<double> qkv(n * 3 * e), heads(n * e), y(n * e);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t r = 0; r < 3 * e; ++r) {
      double acc = b[r];
      for (std::size_t c = 0; c < e; ++c) acc += double(x[t * e + c]) * w[r * e + c];
      qkv[t * 3 * e + r] = acc;
    }
  for (std::size_t hd = 0; hd < h; ++hd)
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> p(n);
      for (std::size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (std::size_t d = 0; d < dk; ++d)
          dot += qkv[i * 3 * e + hd * dk + d] * qkv[j * 3 * e + e + hd * dk + d];
        p[j] = dot / std::sqrt(double(dk));
      }
      const double mx = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (double& v : p) sum += (v = std::exp(v - mx));
      for (std::size_t d = 0; d < dk; ++d) {
        double acc = 0;
        for (std::size_t j = 0; j < n; ++j)
          acc += p[j] / sum * qkv[j * 3 * e + 2 * e + hd * dk + d];
        heads[i * e + hd * dk + d] = acc;
      }
    }
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t r = 0; r < e; ++r) {
      double acc = bo[r];
      for (std::size_t c = 0; c < e; ++c) acc += heads[t * e + c] * wo[r * e + c];
      y[t * e + r] = acc;
    }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : ".";
  const state_dict sd = make_state_dict();
  const std::filesystem::path file = dir / "mha.safetensors";
  save_safetensors(file, sd);
  int failures = 0;
  const auto check = [&](bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
  };

  // [load]
  using mha_t = argus::multi_head_attention<16, 4>;  // embed_dim 16, num_heads 4
  const argus::safetensors_file weights(file);       // reads and checks the header
  const mha_t mha = argus::load_pytorch_mha<mha_t>(weights);
  // [load]
  std::printf("loaded %s: %zu tensors\n", file.string().c_str(), weights.entries().size());
  check(mha.w_q(3, 1) == sd.at("in_proj_weight").second[1 * e + 3],
        "W_q(3, 1) == in_proj_weight[1][3]");
  check(mha.w_v(0, 2) == sd.at("in_proj_weight").second[(2 * e + 2) * e + 0],
        "W_v(0, 2) == in_proj_weight[2E + 2][0]");
  check(mha.w_o(5, 7) == sd.at("out_proj.weight").second[7 * e + 5],
        "W_o(5, 7) == out_proj.weight[7][5]");

  argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>> x(
      1, n);  // (1,SEQ,D_MODEL)
  std::vector<float> xs(n * e);
  for (std::size_t i = 0; i < xs.size(); ++i)
    x.data()[i] = xs[i] = float(std::sin(0.7 * double(i)));
  const auto y = argus::evaluate(mha.forward(x), argus::fused);  // (1,SEQ,D_MODEL)
  const std::vector<double> want = torch_forward(sd, xs);
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(y.data()[i]) - want[i]));
  std::printf("max |argus - torch formula| = %.2g\n", worst);
  check(worst < 1e-5, "the loaded module computes torch's output (float32 within 1e-5)");

  // Modules the file does not fit: each is a load_error naming file, tensor and expectation.
  std::printf("\nloading into modules it does not fit:\n");
  const auto show = [&](auto load) {
    try {
      load();
      check(false, "expected a load_error");
    } catch (const argus::load_error& err) {
      std::printf("  load_error: %s\n", err.what());
    }
  };
  show([&] {
    (void)argus::load_pytorch_mha<argus::multi_head_attention<16, 4, argus::mha_options{.d_k = 8}>>(
        weights);
  });
  show([&] {
    (void)argus::load_pytorch_mha<
        argus::multi_head_attention<16, 4, argus::mha_options{.bias = false}>>(weights);
  });
  show([&] { (void)argus::load_pytorch_mha<mha_t>(argus::npy_directory(dir)); });
  return failures == 0 ? 0 : 1;
}
