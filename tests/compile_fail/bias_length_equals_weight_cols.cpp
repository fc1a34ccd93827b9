// project(x, w, b): x·W + b needs one bias entry per column of W.
// expect: bias_length_equals_weight_cols
// expect-clang: '48UL == 64UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
template <std::size_t Length>
using bias = argus::tensor<float, argus::shape<argus::model<Length>>>;

void build(const activation& x, const weight& w, const bias<64>& b, const bias<48>& b_short) {
  (void)argus::project(x, w, b);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w, b_short);  // 48 biases, 64 columns
#else
  (void)b_short;
#endif
}

int main() { return 0; }
