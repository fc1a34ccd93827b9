// A packed_weight is held by reference, as a tensor is: a temporary one, which would dangle,
// cannot be an operand. Name it (it packs once, so naming it is also what saves the work).
// expect: operand_is_not_a_temporary_tensor
// expect: argus::packed_weight<float, argus::shape<argus::model<64>, argus::model<32> > >
#include <argus/argus.hpp>

using activation =
    argus::tensor<float, argus::shape<argus::batch<2>, argus::seq<16>, argus::model<64>>>;
using weight = argus::tensor<float, argus::shape<argus::model<64>, argus::model<32>>>;

void build(const activation& x, const weight& w) {
  const argus::packed_weight packed(w);
  (void)argus::project(x, packed);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::project(x, argus::packed_weight(w));  // packed, then gone at the semicolon
#endif
}

int main() { return 0; }
