// multi_head_attention::forward(x): x has a batch axis, also for one sequence (batch<1>).
// expect: axes_are_batch_seq_model
// expect-gcc: seq<6>, (argus::)?model<32>
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<1>, argus::seq<6>, argus::model<32>>>;
using unbatched = argus::tensor<float, argus::shape<argus::seq<6>, argus::model<32>>>;

void build(const mha& m, const activation& x, const unbatched& xs) {
  (void)m.forward(x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(xs);  // (seq, model)
#else
  (void)xs;
#endif
}

int main() { return 0; }
