// split_heads_view<H>(x) is a view of x's memory: x is a tensor_view or a named tensor. A
// temporary tensor's memory is gone at the end of the statement (the view would dangle; it
// was "no matching function", and a view of the temporary's view() compiled).
// expect: split_heads_view_takes_a_view_or_a_named_tensor
// expect-clang: split_heads_view<2UL, argus::tensor<float
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>>;

activation make() { return activation(2, 3); }

int main() {
  activation x(2, 3);
  const activation c(2, 3);
  const auto heads = argus::split_heads_view<2>(x);  // a named tensor: (2, 2, 3, 8)
  const auto read_only = argus::split_heads_view<4>(c);
  const auto of_a_view = argus::split_heads_view<2>(x.view());
  (void)heads;
  (void)read_only;
  (void)of_a_view;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::split_heads_view<2>(make());  // gone at the ';'
  (void)misuse;
#endif
  return 0;
}
