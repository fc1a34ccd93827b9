// scores(q, k): Q·Kᵀ needs queries and keys of the same per-head width d_k.
// expect: q_and_k_head_widths_agree
// expect-clang: '8UL == 16UL'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

template <std::size_t DK>
using heads = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::head_dim<DK>>>;

void build(const heads<8>& q, const heads<8>& k, const heads<16>& k_wide) {
  (void)argus::scores(q, k);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(q, k_wide);  // d_k 8 for queries, 16 for keys
#else
  (void)k_wide;
#endif
}

int main() { return 0; }
