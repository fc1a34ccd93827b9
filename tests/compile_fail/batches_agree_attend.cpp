// attend(p, v): attention weights and values have the same batch.
// expect: batches_agree
// expect-clang: extents_may_agree<2UL, 3UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Batch>
using values = argus::tensor<
    float, argus::shape<argus::batch<Batch>, argus::head<8>, argus::seq<12>, argus::head_dim<8>>>;

void build(const weights& p, const values<2>& v, const values<3>& v_other) {
  (void)argus::attend(p, v);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attend(p, v_other);  // batch 2 of the weights, 3 of the values
#else
  (void)v_other;
#endif
}

int main() { return 0; }
