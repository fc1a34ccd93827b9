// multi_head_attention(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o): the biases are (model); a
// (head<2>, head_dim<32>) b_q, 64 entries like the module's (model<64>), is not.
// expect: axes_are_a_bias
// expect-gcc: S = argus::shape<argus::head<2>, argus::head_dim<32> >
// expect-clang: axes_are_a_bias
#include <argus/argus.hpp>

using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using bias = argus::tensor<float, argus::shape<argus::model<64>>>;
using per_head_bias = argus::tensor<float, argus::shape<argus::head<2>, argus::head_dim<32>>>;

void build(const weight& w, const bias& b, const per_head_bias& bh) {
  const argus::multi_head_attention<64, 4> m(w, w, w, w, b, b, b, b);
  (void)m;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::multi_head_attention<64, 4> bad(w, w, w, w, bh, b, b, b);  // b_q per head
  (void)bad;
#else
  (void)bh;
#endif
}
