// make_attention_map(w) draws attention weights, (batch, head, seq_q, seq_kv); here it is
// given the layer's output, (batch, seq, model) (before, Clang named the rule only at line 12,
// after a candidate list).
// expect: axes_are_batch_head_seq_seq: argus::make_attention_map
// expect-gcc: seq<16>, model<64>
// expect-clang: argus::seq<16>, argus::model<64>
#include <argus/argus.hpp>
#include <argus/viz/attention_map.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<16>, argus::seq<16>>>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;

void draw(const weights& w, const activation& y) {
  (void)argus::make_attention_map(w);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::make_attention_map(y);  // the output, not the weights
#else
  (void)y;
#endif
}

int main() { return 0; }
