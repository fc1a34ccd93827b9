// project(x, w): every operand of an expression has the same value type; argus converts
// nothing silently.
// expect: value_types_agree
// expect-gcc: value_types_agree<
// expect-clang: 'std::is_same_v<float, double>'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
template <class T>
using weight = argus::tensor<T, argus::shape<argus::model<64>, argus::model<64>>>;

void build(const activation& x, const weight<float>& w, const weight<double>& w_double) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w_double);  // float x, double W
#else
  (void)w_double;
#endif
}

int main() { return 0; }
