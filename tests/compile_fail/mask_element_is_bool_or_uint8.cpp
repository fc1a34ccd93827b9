// ignore_keys(padding), ignore_where(m): a boolean mask holds bool or std::uint8_t
// (non-zero = ignore). Float logits go through add_to_scores instead.
// expect: mask_element_is_bool_or_uint8
// expect-clang: float.* does not satisfy 'mask_element_is_bool_or_uint8'
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

template <class M>
using padding = argus::tensor<M, argus::shape<argus::batch<2>, argus::seq<12>>>;

void build(const padding<bool>& p, const padding<float>& p_float) {
  (void)argus::ignore_keys(p);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::ignore_keys(p_float);  // float elements
#else
  (void)p_float;
#endif
}

int main() { return 0; }
