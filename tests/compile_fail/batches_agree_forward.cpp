// multi_head_attention::forward(x_q, x_k, x_v): queries, keys and values have the same batch,
// when the batches are static.
// expect: batches_agree
// expect-clang: extents_may_agree<2UL, 3UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using mha = argus::multi_head_attention<64, 8>;
template <std::size_t Batch>
using activation =
    argus::tensor<float, argus::shape<argus::batch<Batch>, argus::seq<16>, argus::model<64>>>;

void build(const mha& m, const activation<2>& x, const activation<3>& x_other) {
  (void)m.forward(x, x, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, x_other, x_other);  // batch 2 of queries, 3 of keys and values
#else
  (void)x_other;
#endif
}

int main() { return 0; }
