// multi_head_attention::forward(x_q, x_k, x_v): inputs are activations (batch, seq, model);
// a (batch, model, seq) tensor of the very same sizes is rejected by its axis names.
// expect: axes_are_batch_seq_model
// expect: argus::batch<2>, argus::model<64>, argus::seq<64>
// expect-clang: does not satisfy 'axes_are_batch_seq_model'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<64>, argus::model<64>>>;
using transposed =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::model<64>, argus::seq<64>>>;

void build(const mha& m, const activation& x, const transposed& x_t) {
  (void)m.forward(x, x, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x_t, x);  // keys given as (batch, model, seq)
#else
  (void)x_t;
#endif
}

int main() { return 0; }
