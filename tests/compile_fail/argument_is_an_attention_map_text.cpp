// attention_text(m) draws an attention_map; here it is given the expression of the weights,
// attention_weights(y), neither evaluated nor made a map (before, a bare conversion error).
// expect: argument_is_an_attention_map: argus::attention_text
#include <argus/argus.hpp>
#include <argus/viz/attention_text.hpp>

using mha = argus::multi_head_attention<64, 8>;
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<5>, argus::model<64>>>;

void show(const mha& m, const activation& x) {
  const auto y = m.forward(x);
  (void)argus::attention_text(
      argus::make_attention_map(argus::evaluate(argus::attention_weights(y), argus::unfused)));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attention_text(argus::attention_weights(y));  // the expression itself
#endif
}

int main() { return 0; }
