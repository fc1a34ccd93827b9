// mask(s, masks...) with no mask would be s itself: a mistake, not a no-op (before, the message
// named no rule).
// expect: mask_takes_at_least_one_mask
#include <argus/argus.hpp>

using split = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<4>, argus::seq<8>, argus::head_dim<16>>>;

void scores(const split& q, const split& k) {
  (void)argus::mask(argus::scores(q, k), argus::causal);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::mask(argus::scores(q, k));  // no mask
#endif
}

int main() { return 0; }
