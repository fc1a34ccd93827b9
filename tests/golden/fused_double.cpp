// Golden cases (shared/golden, PyTorch 1.13) through the fused evaluator in float64: the
// output within 1e-10 relative of the float64 truth.
#include "../support/golden_mha.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE_TEMPLATE(golden_fused_float64, Case, argus::test::golden_cases) {
  argus::test::run_golden<Case, double>(argus::fused);
}
