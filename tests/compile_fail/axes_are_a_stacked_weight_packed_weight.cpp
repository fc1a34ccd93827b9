// argus::packed_weight packs the W of x·W, a stacked weight (model, model); a per-head weight
// (head, model, head_dim) is not one.
// expect: axes_are_a_stacked_weight
// expect: argus::head<8>, argus::model<64>, argus::head_dim<8>
#include <argus/eval/packed_weight.hpp>

using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<64>>>;
using per_head_weight =
    argus::tensor<float, argus::shape<argus::head<8>, argus::model<64>, argus::head_dim<8>>>;

void build(const weight& w, const per_head_weight& w_per_head) {
  const argus::packed_weight twin(w);
  (void)twin;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::packed_weight misuse(w_per_head);
  (void)misuse;
#else
  (void)w_per_head;
#endif
}

int main() { return 0; }
