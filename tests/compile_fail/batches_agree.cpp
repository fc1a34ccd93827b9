// scores(q, k): queries and keys of one expression have the same batch.
// expect: batches_agree
// expect-clang: extents_may_agree<2UL, 3UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

template <std::size_t Batch>
using heads = argus::tensor<
    float, argus::shape<argus::batch<Batch>, argus::head<8>, argus::seq<16>, argus::head_dim<8>>>;

void build(const heads<2>& q, const heads<2>& k, const heads<3>& k_other) {
  (void)argus::scores(q, k);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::scores(q, k_other);  // batch 2 of queries, 3 of keys
#else
  (void)k_other;
#endif
}

int main() { return 0; }
