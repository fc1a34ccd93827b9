// write_attention_svg(path, m) draws an attention_map; here it is given the weights tensor
// that make_attention_map(w) reads (before, a bare conversion error named no rule).
// expect: argument_is_an_attention_map: argus::write_attention_svg
#include <argus/argus.hpp>
#include <argus/viz/attention_svg.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<4>, argus::seq<16>, argus::seq<16>>>;

void draw(const weights& w) {
  argus::write_attention_svg("attention.svg", argus::make_attention_map(w));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::write_attention_svg("attention.svg", w);  // the weights, not their map
#endif
}

int main() { return 0; }
