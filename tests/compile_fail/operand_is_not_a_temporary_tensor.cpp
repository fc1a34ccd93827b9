// Expressions hold owning tensors by reference, so a temporary tensor, which would dangle,
// cannot be an operand. Name the tensor, or pass a tensor_view whose memory outlives the
// expression.
// expect: operand_is_not_a_temporary_tensor
// expect: argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;

activation make_input() { return activation{}; }

void build(const activation& x, const weight& w) {
  (void)argus::project(x, w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(make_input(), w);  // the tensor dies at the semicolon
#endif
}

int main() { return 0; }
