// tensor_view(p) alone views a shape whose extents are all static (as std::mdspan's); a shape
// with dyn axes needs their run-time extents: tensor_view(p, batch, seq).
// expect: run_time_extents_match_dyn_axes
// expect-gcc: Given = 0
// expect-clang: 0 == 2
#include <argus/argus.hpp>

#include <vector>

using fixed = argus::shape<argus::batch<2>, argus::seq<8>, argus::model<32>>;
using dynamic = argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>;

int main() {
  std::vector<float> data(2 * 8 * 32);
  const argus::tensor_view<float, fixed> v(data.data());  // every extent static
  const argus::tensor_view<float, dynamic> w(data.data(), 2, 8);
  (void)v;
  (void)w;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  const argus::tensor_view<float, dynamic> misuse(data.data());  // batch and seq not given
  (void)misuse;
#endif
  return 0;
}
