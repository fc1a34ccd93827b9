// multi_head_attention(w_q, w_k, w_v, w_o): the module holds stacked weights (model, model);
// a per-head weight (head, model, head_dim) of the same number of elements is not one.
// expect: axes_are_a_stacked_weight
// expect: argus::head<8>, argus::model<64>, argus::head_dim<8>
// expect-clang: does not satisfy 'axes_are_a_stacked_weight'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using per_head_weight =
    argus::tensor<float, argus::shape<argus::head<8>, argus::model<64>, argus::head_dim<8>>>;

void build(const weight& w, const per_head_weight& w_per_head) {
  const mha twin(w, w, w, w);
  (void)twin;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const mha misuse(w_per_head, w, w, w);  // W_q given per head
  (void)misuse;
#else
  (void)w_per_head;
#endif
}

int main() { return 0; }
