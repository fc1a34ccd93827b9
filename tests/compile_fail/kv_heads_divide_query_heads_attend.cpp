// attend(p, v): G value heads serve H query heads (grouped-query attention), so G divides H.
// expect: kv_heads_divide_query_heads
// expect-clang: '8UL % 3UL == 0'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Heads>
using values = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<Heads>, argus::seq<12>, argus::head_dim<8>>>;

void build(const weights& p, const values<2>& v, const values<3>& v_three) {
  (void)argus::attend(p, v);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attend(p, v_three);  // 8 % 3 != 0
#else
  (void)v_three;
#endif
}

int main() { return 0; }
