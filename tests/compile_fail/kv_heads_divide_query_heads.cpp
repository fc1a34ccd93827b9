// scores(q, k): G key heads serve H query heads (grouped-query attention), so G divides H.
// expect: kv_heads_divide_query_heads
// expect-clang: '8UL % 3UL == 0'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

template <std::size_t Heads>
using heads = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<Heads>, argus::seq<16>, argus::head_dim<8>>>;

void build(const heads<8>& q, const heads<2>& k, const heads<3>& k_three) {
  (void)argus::scores(q, k);  // 2 key heads, 4 query heads each
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(q, k_three);  // 8 % 3 != 0
#else
  (void)k_three;
#endif
}

int main() { return 0; }
