// multi_head_attention<D, H, O, T>::forward(x_q, x_k, x_v): all three inputs hold the module's T.
// expect: value_types_agree
// expect-clang: 'std::is_same_v<double, float>'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;  // float
template <class T>
using activation =
    argus::tensor<T, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void build(const mha& m, const activation<float>& x, const activation<double>& x_double) {
  (void)m.forward(x, x, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x_double, x_double);  // double keys and values, float module
#else
  (void)x_double;
#endif
}

int main() { return 0; }
