// x.view() of a temporary tensor: the view would point at freed memory once the statement
// ends (before, it compiled, and reading the view read freed memory).
// expect: view_of_a_named_tensor
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<16>>>;

activation make() { return activation(2, 3); }

int main() {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto v = make().view();
#else
  const activation x = make();
  const auto v = x.view();
#endif
  return static_cast<int>(v.extent(1));
}
