// scores(q, k): every operand's widths (model, head, head_dim) are compile-time extents; only
// batch and seq may be run-time. A head<argus::dyn> operand is refused at the entry point:
// nothing would check its head count (3 key heads for 4 query heads read past K).
// expect: model_width_is_static
// expect-gcc: head<18446744073709551615>
// expect-clang: head<18446744073709551615>
#include <argus/expr/scores.hpp>
#include <argus/tensor/tensor.hpp>

using split =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<>, argus::head_dim<16>>>;
using run_time_heads = argus::tensor<float, argus::shape<argus::batch<2>, argus::head<argus::dyn>,
                                                         argus::seq<>, argus::head_dim<16>>>;

void build(const split& q, const split& k, const run_time_heads& k_dyn) {
  (void)argus::scores(q, k);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(q, k_dyn);  // head<dyn>
#else
  (void)k_dyn;
#endif
}
