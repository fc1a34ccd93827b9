// multi_head_attention::forward(x): the model width of x is a compile-time extent; only batch
// and seq may be run-time (argus::dyn).
// expect: model_width_is_static
// expect-gcc: model<18446744073709551615>
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>>;
using run_time_width =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<argus::dyn>>>;

void build(const mha& m, const activation& x, const run_time_width& xw) {
  (void)m.forward(x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(xw);  // model<dyn>
#else
  (void)xw;
#endif
}

int main() { return 0; }
