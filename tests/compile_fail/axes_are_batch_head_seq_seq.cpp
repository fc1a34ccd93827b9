// softmax(s): s is scores (batch, head, seq_q, seq_kv). Split heads (batch, head, seq,
// head_dim) with head_dim == seq_kv == 16 have the same sizes but not the same axes.
// expect: axes_are_batch_head_seq_seq
// expect: argus::batch<2>, argus::head<8>, argus::seq<16>, argus::head_dim<16>
// expect-clang: does not satisfy 'axes_are_batch_head_seq_seq'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using scores =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<16>>>;
using heads = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::head_dim<16>>>;

void build(const scores& s, const heads& q) {
  (void)argus::softmax(s);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::softmax(q);  // the queries, not their scores
#else
  (void)q;
#endif
}

int main() { return 0; }
