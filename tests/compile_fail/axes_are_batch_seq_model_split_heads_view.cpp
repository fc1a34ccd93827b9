// split_heads_view<H>(x) splits the model axis of a (batch, seq, model) view or tensor; a view
// that is already split (batch, head, seq, head_dim) has no model axis to split.
// expect: axes_are_batch_seq_model
// expect-clang: argus::head<2>, argus::seq<3>, argus::head_dim<8>>.*does not satisfy
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<3>, argus::model<16>>>;

int main() {
  activation x;
  const auto heads = argus::split_heads_view<2>(x);  // (2, 2, 3, 8)
  (void)heads;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::split_heads_view<2>(heads);  // split twice
  (void)misuse;
#endif
  return 0;
}
