// split_heads_view<H>(x): the head width, x's model width / H, is part of the view's type, so
// the model width is static. With model<dyn> and H = 1 this compiled and threw a misleading
// shape_error at run time; H = 2 reported heads_divide_width, H = 3 an overflow.
// expect: model_width_is_static
// expect-gcc: Width = 18446744073709551615
// expect-clang: 18446744073709551615UL !=
#include <argus/argus.hpp>

#include <vector>

using fixed = argus::shape<argus::batch<>, argus::seq<>, argus::model<18>>;
using run_time_width = argus::shape<argus::batch<>, argus::seq<>, argus::model<argus::dyn>>;

int main() {
  std::vector<float> data(2 * 3 * 18);
  const argus::tensor_view<float, fixed> v(data.data(), 2, 3);
  const argus::tensor_view<float, run_time_width> w(data.data(), 2, 3, 18);
  const auto heads = argus::split_heads_view<3>(v);  // (2, 3, 3, 6)
  (void)heads;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const auto misuse = argus::split_heads_view<1>(w);  // model<dyn>
  (void)misuse;
#else
  (void)w;
#endif
  return 0;
}
