// Gradient cases (shared/golden_grad, PyTorch 1.13 autograd of the shared/golden cases)
// through forward_for_training and backward: unfused and fused, float32 and float64, each
// gradient within the README's tolerance of the float64 reference.
// labels: memory
#include "../support/golden_grad.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE_TEMPLATE(golden_grad_unfused_float32, Case, argus::test::golden_cases) {
  argus::test::run_golden_grad<Case, float>(argus::unfused);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(golden_grad_unfused_float64, Case, argus::test::golden_cases) {
  argus::test::run_golden_grad<Case, double>(argus::unfused);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(golden_grad_fused_float32, Case, argus::test::golden_cases) {
  argus::test::run_golden_grad<Case, float>(argus::fused);
}
BOOST_AUTO_TEST_CASE_TEMPLATE(golden_grad_fused_float64, Case, argus::test::golden_cases) {
  argus::test::run_golden_grad<Case, double>(argus::fused);
}
