// 11_training -- a training step with argus: forward_for_training keeps what the backward
// needs, backward returns the gradients as typed tensors, and a plain SGD step applies them.
//
// A "student" multi_head_attention learns to reproduce a "teacher" of the same
// configuration (random weights, causal self-attention) on random sequences: the loss
// L = ½ Σ (y − t)² has dL/dy = y − t. The program prints the loss every 20 steps and exits
// non-zero unless it fell below a fifth of its start. docs/explanation/training.md quotes it.
#include <argus/argus.hpp>
#include <argus/grad/training.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <random>

namespace {

template <class Tensor>
void randomize(Tensor& t, double scale, std::mt19937& g) {
  std::normal_distribution<double> n(0.0, scale);
  for (auto& v : t) v = static_cast<typename Tensor::value_type>(n(g));
}

/// w ← w − rate · dw, element by element (a parameter and its gradient have the same type).
template <class Tensor>
void sgd_step(Tensor& w, const Tensor& dw, float rate) {
  for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] -= rate * dw.data()[i];
}

}  // namespace

int main() {
  using namespace argus;
  using mha = multi_head_attention<32, 4>;  // d_model 32, 4 heads of d_k = 8, biases
  using activation = tensor<float, shape<batch<>, seq<>, model<32>>>;  // (B,SEQ,D_MODEL)
  std::mt19937 g(7);
  const double s = 1.0 / std::sqrt(32.0);
  mha teacher, student;
  randomize(teacher.w_q, s, g), randomize(teacher.w_k, s, g), randomize(teacher.w_v, s, g),
      randomize(teacher.w_o, s, g);
  randomize(student.w_q, s, g), randomize(student.w_k, s, g), randomize(student.w_v, s, g),
      randomize(student.w_o, s, g);

  const std::size_t batch = 8, n = 24;
  activation x(batch, n), dout(batch, n);
  double first = 0, last = 0;
  for (int step = 0; step <= 200; ++step) {
    randomize(x, 1.0, g);
    const activation target = evaluate(teacher.forward(x, causal), fused);

    // [training-step]
    auto tape =
        forward_for_training(student, fused, x, causal);  // y = student(x), kept for backward
    const activation& y = tape.output();
    double loss = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const float e = y.data()[i] - target.data()[i];
      dout.data()[i] = e;  // dL/dy for L = ½ Σ (y − t)²
      loss += 0.5 * double(e) * double(e);
    }
    const auto grad =
        backward(tape, dout, fused);  // gradients<mha, ...>: grad.w_q is a tensor like student.w_q
    const float rate = 0.02f / float(batch);
    sgd_step(student.w_q, grad.w_q, rate), sgd_step(student.w_k, grad.w_k, rate);
    sgd_step(student.w_v, grad.w_v, rate), sgd_step(student.w_o, grad.w_o, rate);
    sgd_step(student.b_q, grad.b_q, rate), sgd_step(student.b_k, grad.b_k, rate);
    sgd_step(student.b_v, grad.b_v, rate), sgd_step(student.b_o, grad.b_o, rate);
    // [training-step]

    loss /= double(batch);
    if (step == 0) first = loss;
    last = loss;
    if (step % 20 == 0) std::printf("step %3d  loss per sequence %.5f\n", step, loss);
  }
  const bool ok = last < first / 5;
  std::printf("loss %.5f -> %.5f: %s\n", first, last, ok ? "learned" : "did NOT fall to a fifth");
  return ok ? 0 : 1;
}
