// split_heads<Heads>(x) and every other entry point take an argus tensor, tensor_view or
// expression; a std::vector of the right size is not one (wrap it in a tensor_view).
// expect: operand_is_a_tensor_view_or_expression
#include <argus/argus.hpp>

#include <vector>

using view =
    argus::tensor_view<float, argus::shape<argus::batch<>, argus::seq<>, argus::model<32>>>;

void build(std::vector<float>& data) {
  (void)argus::split_heads<4>(view(data.data(), 2, 8));
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::split_heads<4>(data);  // a std::vector, not a view of it
#endif
}

int main() { return 0; }
