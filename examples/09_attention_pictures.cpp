// 09_attention_pictures -- what each head looks at, as pictures (argus/viz/, optional).
//
//     09_attention_pictures [output directory, default .]
//
// A 4-head module (d_model 32, d_k 8) reads the 10-token sentence "the cat sat on the mat
// because it was tired". Embeddings are made here, deterministically: each token is a word
// part (16 numbers drawn from a hash of the word) and a position part (sin/cos of the
// position at 8 frequencies). The weights give each head one job, so the pictures have
// something to show:
//   head 0  same word:       Q and K read the word part alike, so "the" finds "the";
//   head 1  previous token:  Q rotates the position back by one step, K keeps it;
//   head 2  neighbourhood:   Q and K read slower position frequencies: a soft band;
//   head 3  random weights:  what an untrained head looks like.
// It writes attention.svg and attention.png to the directory, prints the terminal picture
// and checks heads 0 and 1 do their jobs (exit status 1 if not).
// docs/how-to/draw_attention.md quotes it; docs/img/attention_heads.png is its picture.
#include <argus/argus.hpp>
#include <argus/viz/attention_map.hpp>
#include <argus/viz/attention_png.hpp>
#include <argus/viz/attention_svg.hpp>
#include <argus/viz/attention_text.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr std::size_t d_model = 32, heads = 4, d_k = 8, word_dims = 16;
// Angular frequencies of the position part: dims 16 + 2i, 17 + 2i hold sin, cos of w[i]·p.
constexpr std::array<double, 8> w = {1.0, 0.7, 0.45, 0.25, 0.2, 0.12, 0.07, 0.04};

/// splitmix64: a deterministic stream of numbers in [-1, 1) from a seed.
struct splitmix {
  std::uint64_t s;
  double next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return double((z ^ (z >> 31)) >> 11) / double(1ull << 52) - 1.0;
  }
};

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace argus;
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : ".";
  const std::vector<std::string> tokens = {"the", "cat",     "sat", "on",  "the",
                                           "mat", "because", "it",  "was", "tired"};
  const std::size_t n = tokens.size();

  // --- embeddings: word part (unit length) | position part -----------------------------
  tensor<float, shape<batch<>, seq<>, model<d_model>>> x(1, n);  // (1,SEQ,D_MODEL)
  for (std::size_t p = 0; p < n; ++p) {
    splitmix g{fnv1a(tokens[p])};
    std::array<double, word_dims> v{};
    double norm = 0;
    for (double& e : v) e = g.next(), norm += e * e;
    for (std::size_t i = 0; i < word_dims; ++i) x(0, p, i) = float(v[i] / std::sqrt(norm));
    for (std::size_t i = 0; i < w.size(); ++i) {
      x(0, p, word_dims + 2 * i) = float(std::sin(w[i] * double(p)));
      x(0, p, word_dims + 2 * i + 1) = float(std::cos(w[i] * double(p)));
    }
  }

  // --- one job per head (x·W: row = input feature, column = head h's feature 8h + j) ----
  multi_head_attention<d_model, heads, mha_options{.bias = false}> mha;
  for (std::size_t j = 0; j < d_k; ++j) {  // head 0: the first 8 word features, scaled
    mha.w_q(j, j) = 5.0f;
    mha.w_k(j, j) = 5.0f;
  }
  for (std::size_t i = 0; i < 4; ++i) {  // head 1: the 4 fast frequencies, Q one step back
    const std::size_t s = word_dims + 2 * i, c = s + 1, qs = d_k + 2 * i, qc = qs + 1;
    const float cw = float(std::cos(w[i])), sw = float(std::sin(w[i])), sharp = 10.0f;
    mha.w_q(s, qs) = sharp * cw, mha.w_q(c, qs) = -sharp * sw;  // sin(w(p-1))
    mha.w_q(s, qc) = sharp * sw, mha.w_q(c, qc) = sharp * cw;   // cos(w(p-1))
    mha.w_k(s, qs) = 1.0f, mha.w_k(c, qc) = 1.0f;
  }
  for (std::size_t i = 3; i < 7; ++i) {  // head 2: 4 slower frequencies, Q and K alike
    const std::size_t s = word_dims + 2 * i, col = 2 * d_k + 2 * (i - 3);
    mha.w_q(s, col) = mha.w_k(s, col) = 4.0f;
    mha.w_q(s + 1, col + 1) = mha.w_k(s + 1, col + 1) = 4.0f;
  }
  splitmix g{2024};  // head 3: random, and a random value/output path for every head
  for (std::size_t r = 0; r < d_model; ++r)
    for (std::size_t j = 0; j < d_k; ++j) {
      mha.w_q(r, 3 * d_k + j) = float(g.next() * 0.9);
      mha.w_k(r, 3 * d_k + j) = float(g.next() * 0.9);
    }
  for (auto& v : mha.w_v) v = float(g.next() / std::sqrt(double(d_model)));
  for (auto& v : mha.w_o) v = float(g.next() / std::sqrt(double(d_model)));

  // --- evaluate, then draw ------------------------------------------------------------
  const auto y = mha.forward(x);
  const auto weights = evaluate(attention_weights(y), fused);  // (1,HEADS,SEQ,SEQ)
  const attention_map picture = make_attention_map(
      weights, {.title = "the cat sat on the mat because it was tired", .query_tokens = tokens});
  write_attention_svg(out_dir / "attention.svg", picture);
  write_attention_png(out_dir / "attention.png", picture);
  std::cout << attention_text(picture) << "\n";
  std::printf("wrote %s and %s\n", (out_dir / "attention.svg").string().c_str(),
              (out_dir / "attention.png").string().c_str());

  // --- the heads do their jobs --------------------------------------------------------
  int failures = 0;
  const auto argmax = [&](std::size_t h, std::size_t q, std::size_t skip) {
    std::size_t best = skip == 0 ? 1 : 0;
    for (std::size_t k = 0; k < n; ++k)
      if (k != skip && picture.at(h, q, k) > picture.at(h, q, best)) best = k;
    return best;
  };
  const auto check = [&](bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
  };
  check(argmax(0, 4, 4) == 0 && argmax(0, 0, 0) == 4,
        "head 0: each 'the' attends most to the other 'the', after itself");
  bool previous = true;
  for (std::size_t q = 1; q < n; ++q) previous = previous && argmax(1, q, n) == q - 1;
  check(previous, "head 1: every token but the first attends most to the token before it");
  return failures == 0 ? 0 : 1;
}
