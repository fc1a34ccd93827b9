// multi_head_attention::forward(x): x is (batch, seq, model); a (batch, model, seq) tensor is
// rejected even when the numbers happen to agree (32 positions of a 32-wide model).
// expect: axes_are_batch_seq_model
// expect-gcc: model<32>, (argus::)?seq<32>
// expect-clang: model<32>, argus::seq<32>
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<32>, argus::model<32>>>;
using transposed =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::model<32>, argus::seq<32>>>;

void build(const mha& m, const activation& x, const transposed& xt) {
  (void)m.forward(x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(xt);  // (batch, model, seq)
#else
  (void)xt;
#endif
}

int main() { return 0; }
