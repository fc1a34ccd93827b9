// attention_svg(m) draws an attention_map; here it is given the options a map is made with.
// expect: argument_is_an_attention_map: argus::attention_svg
#include <argus/argus.hpp>
#include <argus/viz/attention_svg.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<1>, argus::head<2>, argus::seq<4>, argus::seq<4>>>;

void draw(const weights& w) {
  const argus::attention_picture_options options{.title = "layer 0"};
  (void)argus::attention_svg(argus::make_attention_map(w, options));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attention_svg(options);  // the options, not the map
#endif
}

int main() { return 0; }
