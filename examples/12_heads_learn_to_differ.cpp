// 12_heads_learn_to_differ -- why heads end up different, and what each ends up doing.
//
//     12_heads_learn_to_differ [steps, default 1000] [picture directory, default .]
//
// A multi_head_attention<48, 3> (3 heads of d_k = d_v = 16, causal self-attention) learns a
// retrieval task made here. A sequence holds 16 tokens: 8 distinct values out of 16 (the
// letters a..p), then the same 8 in another order. Token i is x_i = [value | position |
// payload]: its value and its position one-hot (16 numbers each), and 16 random numbers of
// its own, the payload. The target at position i adds the payloads of three tokens, each
// read through its own fixed random matrix R (16, 48):
//     t_i = payload(i − 1)·R_previous + payload(0)·R_first + payload(j)·R_same,
// j the first position holding token i's value (i itself in the first half; the previous
// token of position 0 is itself). A head is one softmax over positions followed by one linear
// map of what it reads, so a head can serve one rule: the natural solution is a head per rule.
//
// Three copies of the module learn it with Adam, on the same batches:
//   - "identical", twice (fused and unfused backward): every head starts from the same
//     weights (head h's columns of W_q, W_k, W_v and their biases, and its rows of W_o,
//     copied from head 0). Every head gets the same x, so equal heads get equal gradients
//     and stay equal to the last bit: the module stays a one-head module;
//   - "random": every head starts from its own random weights, and the heads specialise.
// It prints the loss on held-out sequences as training goes; per head, the share of its
// attention on each rule's position and the rule it follows; the mean total-variation
// distance between the heads' attention rows before and after training; and it draws every
// head's attention map before and after training as PNG pictures (argus/viz/). Exit status 1
// unless the losses fell, the identical heads are bitwise identical, the random heads'
// distance grew well past the identical heads' 0 and each rule has a head of its own.
// docs/tutorial/training.md quotes it; its pictures in docs/img/ come from the long form,
// `12_heads_learn_to_differ 1000 docs/img`. ctest runs the short form below (a second).
// ctest-args: 150
#include <argus/argus.hpp>
#include <argus/grad/optimizers.hpp>
#include <argus/grad/training.hpp>
#include <argus/viz/attention_map.hpp>
#include <argus/viz/attention_png.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t n = 16, half = n / 2, values = 16, payload_dims = 16;
constexpr std::size_t d_model = values + n + payload_dims, heads = 3, d_head = d_model / heads;
constexpr std::size_t rules = 3;
constexpr std::array<const char*, rules> rule_names = {"previous token", "first token",
                                                       "same value"};
using mha = argus::multi_head_attention<d_model, heads>;
using activation = argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>,
                                                     argus::model<d_model>>>;  // (B,SEQ,D_MODEL)
using payloads =
    argus::tensor<float,
                  argus::shape<argus::batch<>, argus::seq<>, argus::model<rules * payload_dims>>>;
using readers = argus::tensor<float, argus::shape<argus::model<rules * payload_dims>,
                                                  argus::model<d_model>>>;  // (3*16,D_MODEL)

template <class Tensor>
void randomize(Tensor& t, double scale, std::mt19937& g) {
  std::normal_distribution<double> d(0.0, scale);
  for (auto& v : t) v = static_cast<float>(d(g));
}

void random_weights(mha& m, std::mt19937& g) {
  const double s = 1.0 / std::sqrt(double(d_model));
  randomize(m.w_q, s, g), randomize(m.w_k, s, g), randomize(m.w_v, s, g), randomize(m.w_o, s, g);
  randomize(m.b_q, 0.1, g), randomize(m.b_k, 0.1, g), randomize(m.b_v, 0.1, g);
}

/// Head h's parameters from head 0's: columns [h·d_head, (h+1)·d_head) of W_q, W_k, W_v
/// (d_model, heads·d_head) and of their biases, rows of W_o (heads·d_head, d_model).
void copy_head_zero(mha& m) {
  for (std::size_t h = 1; h < heads; ++h)
    for (std::size_t c = 0; c < d_head; ++c) {
      for (std::size_t r = 0; r < d_model; ++r) {
        m.w_q(r, h * d_head + c) = m.w_q(r, c);
        m.w_k(r, h * d_head + c) = m.w_k(r, c);
        m.w_v(r, h * d_head + c) = m.w_v(r, c);
        m.w_o(h * d_head + c, r) = m.w_o(c, r);
      }
      m.b_q(h * d_head + c) = m.b_q(c), m.b_k(h * d_head + c) = m.b_k(c);
      m.b_v(h * d_head + c) = m.b_v(c);
    }
}

/// How far the heads are from head 0: the largest |head h − head 0| over every parameter of
/// every head h > 0, and whether every such pair has the same bits.
struct spread {
  double largest = 0;
  bool bitwise_equal = true;
};

spread head_spread(const mha& m) {
  spread s;
  const auto compare = [&s](float other, float zero) {
    s.largest = std::max(s.largest, double(std::abs(other - zero)));
    s.bitwise_equal = s.bitwise_equal &&
                      std::bit_cast<std::uint32_t>(other) == std::bit_cast<std::uint32_t>(zero);
  };
  for (std::size_t h = 1; h < heads; ++h)
    for (std::size_t c = 0; c < d_head; ++c) {
      for (std::size_t r = 0; r < d_model; ++r) {
        compare(m.w_q(r, h * d_head + c), m.w_q(r, c));
        compare(m.w_k(r, h * d_head + c), m.w_k(r, c));
        compare(m.w_v(r, h * d_head + c), m.w_v(r, c));
        compare(m.w_o(h * d_head + c, r), m.w_o(c, r));
      }
      compare(m.b_q(h * d_head + c), m.b_q(c));
      compare(m.b_k(h * d_head + c), m.b_k(c));
      compare(m.b_v(h * d_head + c), m.b_v(c));
    }
  return s;
}

/// A batch of the task: the sequences, their targets, and for every token the position each
/// rule reads.
struct task_batch {
  activation x, target;                                // (B,SEQ,D_MODEL)
  payloads read;                                       // (B,SEQ,3*16): the payloads to read
  std::vector<std::size_t> value;                      // (B,SEQ)
  std::vector<std::array<std::size_t, rules>> source;  // (B,SEQ)
  explicit task_batch(std::size_t b)
      : x(b, n), target(b, n), read(b, n), value(b * n), source(b * n) {}
};

/// Fills t with fresh sequences; `reader` stacks R_previous, R_first and R_same.
void make_task(task_batch& t, const readers& reader, std::mt19937& g) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::array<std::size_t, values> shuffled;  // its first 8: the values of the first half
  std::array<std::size_t, half> copied;  // second half: position i holds copied[i − 8]'s value
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::iota(copied.begin(), copied.end(), 0);
  for (auto& v : t.x) v = 0;
  for (std::size_t b = 0; b < t.x.extent(0); ++b) {
    std::shuffle(shuffled.begin(), shuffled.end(), g);
    std::shuffle(copied.begin(), copied.end(), g);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t same = i < half ? i : copied[i - half];  // where the value first shows
      t.value[b * n + i] = shuffled[same];
      t.source[b * n + i] = {i == 0 ? 0 : i - 1, 0, same};
      t.x(b, i, shuffled[same]) = 1;  // value, one-hot
      t.x(b, i, values + i) = 1;      // position, one-hot
      for (std::size_t k = 0; k < payload_dims; ++k)
        t.x(b, i, values + n + k) = static_cast<float>(normal(g));
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t r = 0; r < rules; ++r)
        for (std::size_t k = 0; k < payload_dims; ++k)
          t.read(b, i, r * payload_dims + k) = t.x(b, t.source[b * n + i][r], values + n + k);
  }
  // t_i = [payload(i − 1) | payload(0) | payload(j)] · [R_previous; R_first; R_same]
  t.target = evaluate(argus::project(t.read, reader), argus::fused);
}

/// ½ Σ (y − t)² per sequence, for m's output on t under policy p.
template <class Policy>
double loss_on(const mha& m, const task_batch& t, Policy p) {
  const activation y = evaluate(m.forward(t.x, argus::causal), p);
  double loss = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = double(y.data()[i]) - double(t.target.data()[i]);
    loss += 0.5 * e * e;
  }
  return loss / double(y.extent(0));
}

/// A module and its optimiser.
struct learner {
  mha m;
  argus::adam<mha> opt{.rate = 0.03f};
};

/// One training step of l on batch t under policy p (argus::fused or argus::unfused).
template <class Policy>
void train_step(learner& l, const task_batch& t, activation& dout, Policy p) {
  // [training-step]
  auto tape = forward_for_training(l.m, p, t.x, argus::causal);  // y = m(x), kept for backward
  const activation& y = tape.output();
  for (std::size_t i = 0; i < y.size(); ++i)
    dout.data()[i] = y.data()[i] - t.target.data()[i];  // dL/dy for L = ½ Σ (y − t)²
  l.opt.step(l.m, backward(tape, dout, p));             // Adam, from the typed gradients
  // [training-step]
}

/// Per head and rule, the attention weight on the rule's position, averaged over the queries
/// of t whose three positions differ. w: attention weights (B,HEADS,SEQ,SEQ) of t.
template <class Weights>
std::array<std::array<double, rules>, heads> rule_shares(const Weights& w, const task_batch& t) {
  std::array<std::array<double, rules>, heads> share{};
  std::size_t queries = 0;
  for (std::size_t b = 0; b < w.extent(0); ++b)
    for (std::size_t i = 0; i < n; ++i) {
      const auto& at = t.source[b * n + i];
      if (at[0] == at[1] || at[0] == at[2] || at[1] == at[2]) continue;
      ++queries;
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t r = 0; r < rules; ++r) share[h][r] += double(w(b, h, i, at[r]));
    }
  for (auto& row : share)
    for (double& s : row) s /= double(queries);
  return share;
}

/// The mean, over pairs of heads, batch items and queries, of the total-variation distance
/// ½ Σ_j |p(j) − p'(j)| between two heads' attention rows p and p': 0 when they are equal,
/// 1 when they attend to disjoint positions. w: attention weights (B,HEADS,SEQ,SEQ).
template <class Weights>
double head_distance(const Weights& w) {
  double sum = 0;
  std::size_t rows = 0;
  for (std::size_t b = 0; b < w.extent(0); ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t h2 = h + 1; h2 < heads; ++h2)
        for (std::size_t i = 1; i < n; ++i) {  // row 0 is (1, 0, 0, ...) in every head
          double tv = 0;
          for (std::size_t j = 0; j <= i; ++j)
            tv += std::abs(double(w(b, h, i, j) - w(b, h2, i, j)));
          sum += tv / 2, ++rows;
        }
  return sum / double(rows);
}

/// Every head's attention map of the first sequence of t, as the PNG picture `file`.
template <class Weights>
void draw(const Weights& w, const task_batch& t, const std::string& title,
          const std::filesystem::path& file) {
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < n; ++i) tokens.emplace_back(1, char('a' + t.value[i]));
  const argus::attention_map picture = argus::make_attention_map(
      w, {.title = title, .query_tokens = tokens, .columns = 0, .scale_max = 1});
  argus::write_attention_png(file, picture);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 1000;
  const std::filesystem::path out_dir = argc > 2 ? argv[2] : ".";
  std::mt19937 g(5);
  readers reader;
  randomize(reader, 1.0 / std::sqrt(double(payload_dims)), g);
  learner random_start;
  random_weights(random_start.m, g);
  learner identical_fused = random_start;
  copy_head_zero(identical_fused.m);
  learner identical_unfused = identical_fused;
  task_batch held_out(32), batch(16);
  make_task(held_out, reader, g);
  const auto attention = [&](const learner& l) {
    return evaluate(attention_weights(l.m.forward(held_out.x, argus::causal)), argus::fused);
  };
  const auto before = attention(random_start), identical_before = attention(identical_fused);

  std::printf(
      "multi_head_attention<%zu, %zu>, d_k = d_v = %zu, causal; %d Adam steps on batches of %zu "
      "sequences of %zu tokens\n",
      d_model, heads, d_head, steps, batch.x.extent(0), n);
  std::printf("\nloss per sequence on %zu held-out sequences\n", held_out.x.extent(0));
  std::printf("%6s  %17s  %17s  %17s\n", "step", "identical, fused", "identical, unfused",
              "random, fused");
  std::array<double, 3> first_loss{}, last_loss{};
  activation dout(batch.x.extent(0), n);
  std::mt19937 batches(11);
  const int every = std::max(1, steps / 10);
  for (int step = 0; step <= steps; ++step) {
    if (step % every == 0 || step == steps) {
      last_loss = {loss_on(identical_fused.m, held_out, argus::fused),
                   loss_on(identical_unfused.m, held_out, argus::unfused),
                   loss_on(random_start.m, held_out, argus::fused)};
      if (step == 0) first_loss = last_loss;
      std::printf("%6d  %17.2f  %17.2f  %17.2f\n", step, last_loss[0], last_loss[1], last_loss[2]);
    }
    if (step == steps) break;
    make_task(batch, reader, batches);  // one batch, the same for the three learners
    const float rate = 0.03f / (1.0f + float(step) / 300.0f);  // inverse-time decay
    for (learner* l : {&identical_fused, &identical_unfused, &random_start}) l->opt.rate = rate;
    train_step(identical_fused, batch, dout, argus::fused);
    train_step(identical_unfused, batch, dout, argus::unfused);
    train_step(random_start, batch, dout, argus::fused);
  }

  const spread spread_fused = head_spread(identical_fused.m),
               spread_unfused = head_spread(identical_unfused.m),
               spread_random = head_spread(random_start.m);
  std::printf("\nmax |head h - head 0| over the parameters after training\n");
  std::printf("  identical start, fused    %g%s\n", spread_fused.largest,
              spread_fused.bitwise_equal ? " (bitwise identical)" : "");
  std::printf("  identical start, unfused  %g%s\n", spread_unfused.largest,
              spread_unfused.bitwise_equal ? " (bitwise identical)" : "");
  std::printf("  random start              %.2f\n", spread_random.largest);

  const auto after = attention(random_start), identical_after = attention(identical_fused);
  std::printf(
      "\nattention on each rule's position, mean over the held-out queries whose three "
      "positions differ\n");
  std::printf("%-26s  %14s  %11s  %10s  %s\n", "", rule_names[0], rule_names[1], rule_names[2],
              "follows");
  bool own_head_per_rule = true;
  std::array<int, rules> followers{};
  const auto shares = [&](const char* when, const auto& w, bool count) {
    const auto s = rule_shares(w, held_out);
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t best =
          std::size_t(std::max_element(s[h].begin(), s[h].end()) - s[h].begin());
      const bool follows = s[h][best] >= 0.5;  // a rule, if it has at least half the weight
      if (count && follows) ++followers[best];
      std::printf("%-19s head %zu  %14.2f  %11.2f  %10.2f  %s\n", h == 0 ? when : "", h, s[h][0],
                  s[h][1], s[h][2], follows ? rule_names[best] : "-");
    }
  };
  shares("random, before", before, false);
  shares("random, after", after, true);
  shares("identical, after", identical_after, false);
  for (int f : followers) own_head_per_rule = own_head_per_rule && f == 1;

  const double d_before = head_distance(before), d_after = head_distance(after);
  const double d_identical_before = head_distance(identical_before),
               d_identical_after = head_distance(identical_after);
  std::printf(
      "\nmean total-variation distance between two heads' attention rows (0: equal, 1: "
      "disjoint)\n");
  std::printf("  identical start  %.3f before training, %.3f after\n", d_identical_before,
              d_identical_after);
  std::printf("  random start     %.3f before training, %.3f after\n", d_before, d_after);

  const std::string trained = "after " + std::to_string(steps) + " steps";
  const std::filesystem::path pictures[] = {out_dir / "heads_before_training.png",
                                            out_dir / "heads_after_training.png",
                                            out_dir / "heads_identical_start.png"};
  draw(before, held_out, "random start, before training", pictures[0]);
  draw(after, held_out, "random start, " + trained, pictures[1]);
  draw(identical_after, held_out, "identical start, " + trained, pictures[2]);
  std::printf("\npictures of the first held-out sequence: %s, %s, %s\n", pictures[0].c_str(),
              pictures[1].c_str(), pictures[2].c_str());

  int failures = 0;
  const auto check = [&](bool ok, const std::string& what) {
    std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
  };
  std::printf("\n");
  check(last_loss[0] < first_loss[0] && last_loss[1] < first_loss[1] &&
            last_loss[2] < first_loss[2] / 10,
        "the losses fell, the random start's below a tenth of its start");
  check(spread_fused.bitwise_equal && spread_unfused.bitwise_equal && d_identical_after == 0,
        "heads started identical are bitwise identical after training, fused and unfused");
  check(d_after >= d_identical_after + 0.5 && d_after >= d_before + 0.3,
        "heads started random differ: distance 0.5 above the identical heads', 0.3 above their "
        "distance before training");
  check(own_head_per_rule, "each rule is followed by a head of its own");
  return failures == 0 ? 0 : 1;
}
