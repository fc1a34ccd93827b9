// A mask kind of one's own: a class with a mask_effect is meant as one, and a member Mask
// lists is missing here (ignores takes (b, h, i, j), not (i, j)).
// expect: mask_kind_has_its_members
#include <argus/argus.hpp>

#include <cstddef>
#include <string>

struct below_diagonal {
  using mask_effect = argus::ignores_pairs;
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  bool ignores(std::size_t i, std::size_t j) const { return j > i; }
#else
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const { return j > i; }
#endif
  std::string name() const { return "below_diagonal"; }
};

using heads = argus::tensor<
    float, argus::shape<argus::batch<1>, argus::head<4>, argus::seq<16>, argus::head_dim<8>>>;

void build(const heads& q, const heads& k) {
  (void)argus::mask(argus::scores(q, k), below_diagonal{});
}

int main() { return 0; }
