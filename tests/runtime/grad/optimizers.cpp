// sgd and adam (grad/optimizers.hpp): the update formulas on given gradients, state kept
// across steps, and a loss that falls when they follow backward()'s gradients.
#define BOOST_TEST_MODULE unit.grad.optimizers
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>
#include <argus/grad/optimizers.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>

namespace {

using M = argus::multi_head_attention<8, 2, argus::mha_options{}, double>;
using S = argus::shape<argus::batch<>, argus::seq<>, argus::model<8>>;
using activation = argus::tensor<double, S>;

argus::gradients<M, S, S, S> constant_gradients(double w, double b) {
  argus::gradients<M, S, S, S> g(S(1, 1), S(1, 1), S(1, 1));
  g.w_q.fill(w), g.w_k.fill(w), g.w_v.fill(w), g.w_o.fill(w);
  g.b_q.fill(b), g.b_k.fill(b), g.b_v.fill(b), g.b_o.fill(b);
  return g;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sgd_with_momentum_follows_its_formula) {
  M m;
  m.w_o.fill(1.0), m.b_o.fill(2.0);
  argus::sgd<M> opt{.rate = 0.1, .momentum = 0.5};
  opt.step(m, constant_gradients(1.0, -2.0));  // v = g;          w -= 0.1 v
  opt.step(m, constant_gradients(3.0, 4.0));   // v = 0.5 v + g;  w -= 0.1 v
  // w_o: v1 = 1, w = 1 - 0.1 = 0.9; v2 = 0.5 + 3 = 3.5, w = 0.9 - 0.35 = 0.55
  // b_o: v1 = -2, b = 2 + 0.2 = 2.2; v2 = -1 + 4 = 3, b = 2.2 - 0.3 = 1.9
  for (double w : m.w_o) BOOST_TEST(w == 0.55, boost::test_tools::tolerance(1e-12));
  for (double b : m.b_o) BOOST_TEST(b == 1.9, boost::test_tools::tolerance(1e-12));
  for (double w : m.w_q) BOOST_TEST(w == -0.45, boost::test_tools::tolerance(1e-12));  // from 0
}

BOOST_AUTO_TEST_CASE(adam_follows_its_formula) {
  M m;
  argus::adam<M> opt{.rate = 0.01};
  opt.step(m,
           constant_gradients(0.5, -2.0));  // first step: m̂ = g, ŝ = g², so Δ = -rate·g/(|g| + ε)
  for (double w : m.w_v)
    BOOST_TEST(w == -0.01 * 0.5 / (0.5 + 1e-8), boost::test_tools::tolerance(1e-12));
  for (double b : m.b_k)
    BOOST_TEST(b == 0.01 * 2.0 / (2.0 + 1e-8), boost::test_tools::tolerance(1e-12));
  opt.step(m, constant_gradients(1.5, -2.0));
  const double m2 = 0.9 * 0.05 + 0.1 * 1.5, s2 = 0.999 * 0.00025 + 0.001 * 2.25;
  const double w2 = -0.01 * 0.5 / (0.5 + 1e-8) -
                    0.01 * (m2 / (1 - 0.81)) / (std::sqrt(s2 / (1 - 0.999 * 0.999)) + 1e-8);
  for (double w : m.w_v) BOOST_TEST(w == w2, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(opt.steps == 2u);
}

// ½ Σ (y − t)² on a fixed input falls under both optimisers following backward().
BOOST_AUTO_TEST_CASE(optimisers_lower_the_loss) {
  auto run = [](auto opt) {
    M m;
    for (auto* w : {&m.w_q, &m.w_k, &m.w_v}) argus::test::randomize(*w, 0.3);
    argus::test::randomize(m.w_o, 0.3);
    activation x(2, 6), target(2, 6), dout(2, 6);
    argus::test::randomize(x), argus::test::randomize(target);
    double first = 0, last = 0;
    for (int step = 0; step < 100; ++step) {
      auto tape = argus::forward_for_training(m, argus::fused, x, argus::causal);
      double loss = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        dout.data()[i] = tape.output().data()[i] - target.data()[i];
        loss += 0.5 * dout.data()[i] * dout.data()[i];
      }
      (step == 0 ? first : last) = loss;
      opt.step(m, argus::backward(tape, dout, argus::fused));
    }
    return last / first;
  };
  const double sgd_ratio = run(argus::sgd<M>{.rate = 0.002, .momentum = 0.9});
  const double adam_ratio = run(argus::adam<M>{.rate = 0.02});
  BOOST_TEST(sgd_ratio < 0.5, "sgd: loss ratio " << sgd_ratio);
  BOOST_TEST(adam_ratio < 0.5, "adam: loss ratio " << adam_ratio);
}
