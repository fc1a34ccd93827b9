// multi_head_attention::forward(x, causal, ignore_keys(padding)): the padding has one entry per
// key; the mask after causal is checked as a mask (not tried as x_k).
// expect: padding_length_equals_seq_kv
// expect-gcc: PaddingLength = 7|SeqKV = 6
// expect-clang: 7UL
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<3>, argus::seq<6>, argus::model<32>>>;
template <std::size_t Keys>
using padding = argus::tensor<bool, argus::shape<argus::batch<3>, argus::seq<Keys>>>;

void build(const mha& m, const activation& x, const padding<6>& pad, const padding<7>& long_pad) {
  (void)m.forward(x, argus::causal, argus::ignore_keys(pad));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(x, argus::causal, argus::ignore_keys(long_pad));  // 7 entries, 6 keys
#else
  (void)long_pad;
#endif
}

int main() { return 0; }
