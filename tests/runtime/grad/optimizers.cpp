// sgd and adam (grad/optimizers.hpp): the update formulas on given gradients, state kept
// across steps, and a loss that falls when they follow backward()'s gradients; the checks
// step makes before it writes anything (hyper-parameters, tensors without storage), and the
// rules it checks at compile time.
#include "../../support/messages.hpp"
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>
#include <argus/grad/optimizers.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

/// A module whose every parameter holds distinct, non-zero values, so that any update shows.
M distinct_module() {
  M m;
  double v = 0.5;
  auto set = [&v](auto& t, double by) {
    for (double& e : t) e = (v += by);
  };
  set(m.w_q, 0.25), set(m.w_k, 0.25), set(m.w_v, 0.25), set(m.w_o, 0.25);
  set(m.b_q, -0.5), set(m.b_k, -0.5), set(m.b_v, -0.5), set(m.b_o, -0.5);
  return m;
}

/// Whether every parameter of a equals, element for element, that of b.
bool same_parameters(const M& a, const M& b) {
  auto same = [](const auto& x, const auto& y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
  };
  return same(a.w_q, b.w_q) && same(a.w_k, b.w_k) && same(a.w_v, b.w_v) && same(a.w_o, b.w_o) &&
         same(a.b_q, b.b_q) && same(a.b_k, b.b_k) && same(a.b_v, b.b_v) && same(a.b_o, b.b_o);
}

using argus::test::says;

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

// step's compile-time rules, in-process (the hard errors are tests/compile_fail/
// module_is_the_optimizers_module*.cpp and gradients_are_of_the_module.cpp).
using M4 = argus::multi_head_attention<8, 4, argus::mha_options{}, double>;
using G = argus::gradients<M, S, S, S>;
static_assert(argus::module_is_the_optimizers_module<M&, M>);
static_assert(!argus::module_is_the_optimizers_module<const M&, M>);  // step updates m
static_assert(!argus::module_is_the_optimizers_module<M, M>);         // a temporary
static_assert(!argus::module_is_the_optimizers_module<M4&, M>);       // another module type
static_assert(argus::gradients_are_of_the_module<G, M>);
static_assert(!argus::gradients_are_of_the_module<G, M4>);
// The gradients of a rejected backward() (an error already reported) are taken silently.
static_assert(requires(argus::sgd<M> o, M m) { o.step(m, argus::detail::rejected{}); });
static_assert(requires(argus::adam<M> o, M m) { o.step(m, argus::detail::rejected{}); });

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

// Each hyper-parameter outside its range throws std::invalid_argument naming it and its value,
// before any weight, state or step count changes.
BOOST_AUTO_TEST_CASE(sgd_rejects_bad_hyper_parameters) {
  struct bad {
    double rate, momentum;
    std::vector<std::string> message;
  };
  for (const bad& b :
       {bad{not_a_number, 0.5, {"argus::sgd::step", "rate is nan"}},
        bad{infinity, 0.5, {"rate is inf"}}, bad{-1, 0.5, {"rate is -1", "finite and at least 0"}},
        bad{0.1, 1, {"momentum is 1", "[0, 1)"}}, bad{0.1, -0.5, {"momentum is -0.5"}},
        bad{0.1, 2, {"momentum is 2"}}, bad{0.1, not_a_number, {"momentum is nan"}}}) {
    M m = distinct_module();
    const M before = m;
    argus::sgd<M> opt{.rate = 0.1, .momentum = 0.5};
    opt.step(m, constant_gradients(1.0, 1.0));  // velocity 1 everywhere
    const M after_one = m;
    opt.rate = b.rate, opt.momentum = b.momentum;
    BOOST_CHECK_EXCEPTION(opt.step(m, constant_gradients(3.0, 3.0)), std::invalid_argument,
                          says(b.message));
    BOOST_TEST(same_parameters(m, after_one));
    BOOST_TEST(!same_parameters(m, before));
    for (double v : opt.velocity.w_o) BOOST_TEST(v == 1.0);
  }
}

BOOST_AUTO_TEST_CASE(adam_rejects_bad_hyper_parameters) {
  struct bad {
    double rate, beta1, beta2, epsilon;
    std::vector<std::string> message;
  };
  for (const bad& b :
       {bad{not_a_number, 0.9, 0.999, 1e-8, {"argus::adam::step", "rate is nan"}},
        bad{infinity, 0.9, 0.999, 1e-8, {"rate is inf"}},
        bad{-0.5, 0.9, 0.999, 1e-8, {"rate is -0.5"}},
        bad{0.01, 1, 0.999, 1e-8, {"beta1 is 1", "[0, 1)"}},
        bad{0.01, -1, 0.999, 1e-8, {"beta1 is -1"}}, bad{0.01, 2, 0.999, 1e-8, {"beta1 is 2"}},
        bad{0.01, not_a_number, 0.999, 1e-8, {"beta1 is nan"}},
        bad{0.01, 0.9, 1, 1e-8, {"beta2 is 1"}}, bad{0.01, 0.9, -0.001, 1e-8, {"beta2 is -0.001"}},
        bad{0.01, 0.9, 0.999, not_a_number, {"epsilon is nan", "finite and greater than 0"}},
        bad{0.01, 0.9, 0.999, 0, {"epsilon is 0"}},
        bad{0.01, 0.9, 0.999, -1e-8, {"epsilon is -1e-08"}},
        bad{0.01, 0.9, 0.999, infinity, {"epsilon is inf"}}}) {
    M m = distinct_module();
    argus::adam<M> opt{.rate = 0.01};
    opt.step(m, constant_gradients(0.5, -2.0));
    const M after_one = m;
    const double first = opt.first.w_v.data()[0], second = opt.second.b_o.data()[0];
    opt.rate = b.rate, opt.beta1 = b.beta1, opt.beta2 = b.beta2, opt.epsilon = b.epsilon;
    BOOST_CHECK_EXCEPTION(opt.step(m, constant_gradients(1.5, -2.0)), std::invalid_argument,
                          says(b.message));
    BOOST_TEST(same_parameters(m, after_one));
    BOOST_TEST(opt.steps == 1u);
    BOOST_TEST(opt.first.w_v.data()[0] == first);
    BOOST_TEST(opt.second.b_o.data()[0] == second);
  }
}

// The value reads back in its own type: a float just above 1 is not shown as "1".
BOOST_AUTO_TEST_CASE(a_bad_value_is_written_in_full) {
  using MF = argus::multi_head_attention<8, 2>;
  MF m;
  argus::adam<MF> opt{.beta1 = 1.0000001f};
  using SF = argus::shape<argus::batch<>, argus::seq<>, argus::model<8>>;
  const argus::gradients<MF, SF, SF, SF> g(SF(1, 1), SF(1, 1), SF(1, 1));
  BOOST_CHECK_EXCEPTION(opt.step(m, g), std::invalid_argument, says({"beta1 is 1.0000001;"}));
}

// Rate 0 is harmless: the weights stay, and the state follows the gradients.
BOOST_AUTO_TEST_CASE(rate_zero_is_allowed) {
  M m = distinct_module();
  const M before = m;
  argus::sgd<M> s{.rate = 0, .momentum = 0.9};
  s.step(m, constant_gradients(1.0, 1.0));
  argus::adam<M> a{.rate = 0, .beta1 = 0, .beta2 = 0};  // beta 0: no memory, also allowed
  a.step(m, constant_gradients(1.0, 1.0));
  BOOST_TEST(same_parameters(m, before));
  for (double v : s.velocity.w_k) BOOST_TEST(v == 1.0);
  BOOST_TEST(a.steps == 1u);
}

// A tensor that step reads or writes but that has no storage (a moved-from module, gradients or
// optimiser) throws shape_error naming it, before any weight changes.
BOOST_AUTO_TEST_CASE(step_rejects_a_moved_from_module) {
  M m = distinct_module();
  M elsewhere = std::move(m);
  for (auto run : {+[](M& x) { argus::sgd<M>{}.step(x, constant_gradients(1, 1)); },
                   +[](M& x) { argus::adam<M>{}.step(x, constant_gradients(1, 1)); }})
    BOOST_CHECK_EXCEPTION(
        run(m), argus::shape_error,
        says({"::step: the module's w_q (64 elements) has no storage", "moved from"}));
  // Only one tensor moved out: the others stay as they were.
  M n = distinct_module();
  const M before = n;
  auto b_o = std::move(n.b_o);
  argus::adam<M> opt;
  BOOST_CHECK_EXCEPTION(opt.step(n, constant_gradients(1, 1)), argus::shape_error,
                        says({"argus::adam::step: the module's b_o (8 elements) has no storage"}));
  n.b_o = std::move(b_o);
  BOOST_TEST(same_parameters(n, before));
  BOOST_TEST(opt.steps == 0u);
  (void)elsewhere;
}

BOOST_AUTO_TEST_CASE(step_rejects_moved_from_gradients) {
  M m = distinct_module();
  const M before = m;
  auto g = constant_gradients(1, 1);
  auto taken = std::move(g);
  argus::sgd<M> s{.momentum = 0.5};
  BOOST_CHECK_EXCEPTION(s.step(m, g), argus::shape_error,
                        says({"argus::sgd::step: the gradients' w_q (64 elements) has no storage",
                              "pass the gradients that backward() returned"}));
  argus::adam<M> a;
  BOOST_CHECK_EXCEPTION(a.step(m, g), argus::shape_error, says({"the gradients' w_q"}));
  auto h = constant_gradients(1, 1);
  auto w_v = std::move(h.w_v);
  BOOST_CHECK_EXCEPTION(a.step(m, h), argus::shape_error, says({"the gradients' w_v"}));
  BOOST_TEST(same_parameters(m, before));
  for (double v : s.velocity.w_q) BOOST_TEST(v == 0.0);
  BOOST_TEST(a.steps == 0u);
  // The input gradients are not used: moving them out leaves g fit for step.
  auto x_q = std::move(taken.x_q);
  s.step(m, taken);
  BOOST_TEST(!same_parameters(m, before));
  (void)w_v, (void)x_q;
}

// A moved-from optimiser is not made valid again (its state and step count moved to the new
// one); step says so, and assigning a new optimiser makes it usable.
BOOST_AUTO_TEST_CASE(step_rejects_a_moved_from_optimiser) {
  M m = distinct_module();
  argus::sgd<M> s{.rate = 0.1, .momentum = 0.9};
  s.step(m, constant_gradients(1, 1));
  auto s2 = std::move(s);
  argus::adam<M> a;
  a.step(m, constant_gradients(1, 1));
  auto a2 = std::move(a);
  const M before = m;
  BOOST_CHECK_EXCEPTION(s.step(m, constant_gradients(1, 1)), argus::shape_error,
                        says({"argus::sgd::step: the optimiser's velocity of w_q (64 elements) "
                              "has no storage",
                              "assign it a new optimiser"}));
  BOOST_CHECK_EXCEPTION(a.step(m, constant_gradients(1, 1)), argus::shape_error,
                        says({"argus::adam::step: the optimiser's first moment of w_q"}));
  // Only the second moment of b_k moved out: found after every other tensor is checked.
  auto taken = std::move(a2.second.b_k);
  BOOST_CHECK_EXCEPTION(a2.step(m, constant_gradients(1, 1)), argus::shape_error,
                        says({"the optimiser's second moment of b_k (8 elements)"}));
  BOOST_TEST(same_parameters(m, before));
  BOOST_TEST(a2.steps == 1u);
  s = argus::sgd<M>{.rate = 0.1};
  s.step(m, constant_gradients(1, 1));
  for (std::size_t e = 0; e < m.w_q.size(); ++e)
    BOOST_TEST(m.w_q.data()[e] == before.w_q.data()[e] - 0.1, boost::test_tools::tolerance(1e-12));
  (void)s2, (void)taken;
}

// The gradients of a rejected backward() (whose error is already reported) change nothing.
BOOST_AUTO_TEST_CASE(rejected_gradients_change_nothing) {
  M m = distinct_module();
  const M before = m;
  argus::sgd<M> s{.rate = 0.1, .momentum = 0.5};
  argus::adam<M> a;
  s.step(m, argus::detail::rejected{});
  a.step(m, argus::detail::rejected{});
  BOOST_TEST(same_parameters(m, before));
  BOOST_TEST(a.steps == 0u);
}
