// Golden cases (shared/golden, PyTorch 1.13) through the unfused evaluator in float32:
// output and per-head attention weights within the README's tolerances of the float64 truth.
#include "../support/golden_mha.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE_TEMPLATE(golden_unfused_float32, Case, argus::test::golden_cases) {
  argus::test::run_golden<Case, float>(argus::unfused);
}
