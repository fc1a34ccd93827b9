// argus::packed_weight packs a weight of compile-time widths, as every operand's are: a
// (model<dyn>, model<dyn>) weight is reported where it is packed (before, it was packed and
// each expression that used it reported the rule).
// expect: model_width_is_static
// expect: packed_weight<T, S> packs a weight of compile-time widths
// expect-gcc: S = argus::shape<argus::model<18446744073709551615>
#include <argus/argus.hpp>
#include <argus/eval/packed_weight.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using run_time_weight =
    argus::tensor<float, argus::shape<argus::model<argus::dyn>, argus::model<argus::dyn>>>;

void build(const activation& x, const weight& w, const run_time_weight& w_dyn) {
  const argus::packed_weight packed(w);
  (void)argus::evaluate(argus::project(x, packed), argus::fused);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::packed_weight misuse(w_dyn);
  (void)argus::evaluate(argus::project(x, misuse), argus::fused);
#else
  (void)w_dyn;
#endif
}

int main() { return 0; }
