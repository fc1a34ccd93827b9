// project(x, w, b): a bias is (model) for a stacked weight, (head, head_dim) for a per-head
// one; a (seq, head_dim) tensor is neither, even with one entry per column of W.
// expect: axes_are_a_bias
// expect-clang: axes_are_a_bias<shape_of<.*shape<argus::seq<4>, argus::head_dim<16> >
// expect-gcc: S = argus::shape<argus::seq<4>, argus::head_dim<16> >
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using bias = argus::tensor<float, argus::shape<argus::model<64>>>;
using not_a_bias = argus::tensor<float, argus::shape<argus::seq<4>, argus::head_dim<16>>>;

void build(const activation& x, const weight& w, const bias& b, const not_a_bias& b_seq) {
  (void)argus::project(x, w, b);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, w, b_seq);  // 4 * 16 = 64 entries, but (seq, head_dim) axes
#else
  (void)b_seq;
#endif
}

int main() { return 0; }
