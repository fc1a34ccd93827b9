// multi_head_attention(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o) needs a module with biases; one
// made with mha_options{.bias = false} takes the four weights alone.
// expect: module_has_biases
#include <argus/argus.hpp>

using no_bias_mha = argus::multi_head_attention<32, 4, argus::mha_options{.bias = false}>;
using weight = argus::tensor<float, argus::shape<argus::model<32>, argus::model<32>>>;
using bias = argus::tensor<float, argus::shape<argus::model<32>>>;

void build(const weight& w, const bias& b) {
  const no_bias_mha fine(w, w, w, w);
  (void)fine;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const no_bias_mha misuse(w, w, w, w, b, b, b, b);  // biases for a bias-free module
  (void)misuse;
#else
  (void)b;
#endif
}

int main() { return 0; }
