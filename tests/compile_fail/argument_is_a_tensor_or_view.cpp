// make_attention_map(w) draws evaluated weights: a tensor or view, not the expression that
// computes them.
// expect: argument_is_a_tensor_or_view: argus::make_attention_map
#include <argus/argus.hpp>
#include <argus/viz/attention_map.hpp>

using split = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<4>, argus::seq<16>, argus::head_dim<8>>>;

void draw(const split& q, const split& k) {
  const auto weights = argus::softmax(argus::scores(q, k));
  (void)argus::make_attention_map(argus::evaluate(weights, argus::unfused));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::make_attention_map(weights);  // not evaluated
#endif
}

int main() { return 0; }
