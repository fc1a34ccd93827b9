// Golden cases (shared/golden, PyTorch 1.13) through the fused evaluator in float32: the
// output within the README's tolerances of the float64 truth (attention weights, which the
// fused loop nest never materialises, are evaluated by the unfused steps of the same policy).
// labels: memory
#include "../support/golden_mha.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE_TEMPLATE(golden_fused_float32, Case, argus::test::golden_cases) {
  argus::test::run_golden<Case, float>(argus::fused);
}
