// prepacked_attention<M>::forward checks what M::forward checks, and says so the same way:
// x_q is d_model wide.
// expect: query_width_equals_d_model
// expect-gcc: XQ = const argus::tensor<float, argus::shape<.*argus::model<32>
// expect-clang: '32UL == 64UL'
#include <argus/eval/prepacked.hpp>

using mha = argus::multi_head_attention<64, 8>;  // d_model 64
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<Width>>>;

void build(const argus::prepacked_attention<mha>& m, const activation<64>& x,
           const activation<32>& narrow) {
  (void)m.forward(x, x, x);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)m.forward(narrow, x, x);  // queries 32 wide, d_model 64
#else
  (void)narrow;
#endif
}

int main() { return 0; }
