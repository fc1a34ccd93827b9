// 12_heads_from_identical_weights -- why heads end up different: every head gets the same x,
// so heads that start from identical weights get identical gradients and stay identical
// forever; only their different random starting weights make them differ.
//
// Two copies of a multi_head_attention<32, 4> (4 heads of d_k = d_v = 8) learn the same task
// (reproduce a random "teacher" module on random sequences, causal self-attention) with Adam:
//   - "identical": every head starts from the same weights (head h's columns of W_q, W_k, W_v
//     and of their biases, and its rows of W_o, copied from head 0);
//   - "random": every head starts from its own random weights.
// After every step the program measures how far each head's parameters are from head 0's,
// with both evaluators. Identical heads must stay identical to the last bit (the kernels
// compute every head with the same operations in the same order); random heads must stay
// apart. Exit status 1 otherwise. ctest runs it with the arguments of the line below.
// ctest-args: 30
#include <argus/argus.hpp>
#include <argus/grad/optimizers.hpp>
#include <argus/grad/training.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace {

constexpr std::size_t d_model = 32, heads = 4, d_head = d_model / heads;
using mha = argus::multi_head_attention<d_model, heads>;
using activation = argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>,
                                                     argus::model<d_model>>>;  // (B,SEQ,D_MODEL)

template <class Tensor>
void randomize(Tensor& t, double scale, std::mt19937& g) {
  std::normal_distribution<double> n(0.0, scale);
  for (auto& v : t) v = static_cast<float>(n(g));
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

/// The largest |head h − head 0| over every parameter of every head h > 0.
double head_spread(const mha& m) {
  double d = 0;
  for (std::size_t h = 1; h < heads; ++h)
    for (std::size_t c = 0; c < d_head; ++c) {
      for (std::size_t r = 0; r < d_model; ++r) {
        d = std::max(d, double(std::abs(m.w_q(r, h * d_head + c) - m.w_q(r, c))));
        d = std::max(d, double(std::abs(m.w_k(r, h * d_head + c) - m.w_k(r, c))));
        d = std::max(d, double(std::abs(m.w_v(r, h * d_head + c) - m.w_v(r, c))));
        d = std::max(d, double(std::abs(m.w_o(h * d_head + c, r) - m.w_o(c, r))));
      }
      d = std::max(d, double(std::abs(m.b_q(h * d_head + c) - m.b_q(c))));
      d = std::max(d, double(std::abs(m.b_k(h * d_head + c) - m.b_k(c))));
      d = std::max(d, double(std::abs(m.b_v(h * d_head + c) - m.b_v(c))));
    }
  return d;
}

struct run_result {
  double first_loss, last_loss, spread;
};

/// Trains `student` for `steps` Adam steps against `teacher` under policy p.
template <class Policy>
run_result train(mha student, const mha& teacher, int steps, Policy p) {
  std::mt19937 g(11);  // the same sequences for every run
  argus::adam<mha> opt{.rate = 3e-3f};
  const std::size_t batch = 4, n = 16;
  activation x(batch, n), dout(batch, n);
  run_result r{0, 0, 0};
  for (int step = 0; step < steps; ++step) {
    randomize(x, 1.0, g);
    const activation target = evaluate(teacher.forward(x, argus::causal), argus::fused);
    auto tape = forward_for_training(student, p, x, argus::causal);
    const activation& y = tape.output();
    double loss = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const float e = y.data()[i] - target.data()[i];
      dout.data()[i] = e;  // dL/dy for L = ½ Σ (y − t)²
      loss += 0.5 * double(e) * double(e) / double(batch);
    }
    opt.step(student, backward(tape, dout, p));
    if (step == 0) r.first_loss = loss;
    r.last_loss = loss;
  }
  r.spread = head_spread(student);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  std::mt19937 g(5);
  mha teacher, random_start;
  random_weights(teacher, g);
  random_weights(random_start, g);
  mha identical_start = random_start;
  copy_head_zero(identical_start);
  std::printf("heads %zu, d_k = d_v = %zu, %d Adam steps, causal self-attention\n", heads, d_head,
              steps);
  std::printf("%-10s %-8s %-12s %-12s %s\n", "start", "policy", "loss first", "loss last",
              "max |head h - head 0|");
  bool ok = true;
  auto report = [&](const char* start, const char* policy, const run_result& r, bool same) {
    std::printf("%-10s %-8s %-12.5f %-12.5f %.3g%s\n", start, policy, r.first_loss, r.last_loss,
                r.spread, same ? " (bitwise identical)" : "");
  };
  for (int policy = 0; policy < 2; ++policy) {
    const char* name = policy == 0 ? "fused" : "unfused";
    const run_result same = policy == 0 ? train(identical_start, teacher, steps, argus::fused)
                                        : train(identical_start, teacher, steps, argus::unfused);
    const run_result apart = policy == 0 ? train(random_start, teacher, steps, argus::fused)
                                         : train(random_start, teacher, steps, argus::unfused);
    report("identical", name, same, same.spread == 0.0);
    report("random", name, apart, false);
    ok = ok && same.spread == 0.0 && apart.spread > 0.01 && same.last_loss < same.first_loss &&
         apart.last_loss < apart.first_loss;
  }
  std::printf("%s\n", ok ? "identical heads stayed identical; random heads stayed apart"
                         : "FAILED: see the table");
  return ok ? 0 : 1;
}
