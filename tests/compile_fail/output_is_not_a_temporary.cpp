// evaluate(e, policy, out) writes into out, a named tensor: into a temporary the result is
// lost (before: "no matching function", and with GCC a second error).
// expect: output_is_not_a_temporary
#include <argus/argus.hpp>

using mha = argus::multi_head_attention<32, 4>;
template <std::size_t Width>
using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<6>, argus::model<Width>>>;

void serve(const mha& m, const activation<32>& x, activation<32>& out) {
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  argus::evaluate(m.forward(x), argus::fused, activation<32>{});
  (void)out;
#else
  argus::evaluate(m.forward(x), argus::fused, out);
#endif
}

int main() { return 0; }
