// A rejected argument of make_attention_map gives one error, its own: make_attention_map then
// returns an empty attention_map silently, and the renderers take a rejected expression
// silently (before, `const attention_map m = ...`, write_attention_svg and attention_text each
// added "no viable conversion from detail::rejected").
// expect: heads_divide_width: argus::split_heads
#include <argus/argus.hpp>
#include <argus/viz/attention_svg.hpp>
#include <argus/viz/attention_text.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;

void draw(const activation& x) {
  (void)argus::make_attention_map(argus::evaluate(
      argus::softmax(argus::scores(argus::split_heads<8>(x), argus::split_heads<8>(x))),
      argus::unfused));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  // 64 % 7 != 0: split_heads<7> reports heads_divide_width; nothing below adds an error.
  const argus::attention_map map = argus::make_attention_map(argus::split_heads<7>(x));
  argus::write_attention_svg("attention.svg", map);
  argus::write_attention_svg("attention.svg", argus::split_heads<7>(x));
  (void)argus::attention_svg(argus::split_heads<7>(x));
  (void)argus::attention_text(argus::split_heads<7>(x));
#endif
}

int main() { return 0; }
