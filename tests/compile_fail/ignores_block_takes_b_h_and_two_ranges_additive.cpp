// An additive mask kind of one's own with an ignores_block: only a kind that ignores pairs is
// asked which blocks it ignores (an additive one ignores a pair by adding -infinity to it).
// expect: ignores_block_takes_b_h_and_two_ranges
// expect: an additive kind has none
#include <argus/argus.hpp>

#include <cstddef>
#include <limits>
#include <string>

struct documents_bias {
  using mask_effect = argus::adds_to_pairs<float>;
  std::size_t length = 4;
  float added(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return i / length == j / length ? 0.0F : -std::numeric_limits<float>::infinity();
  }
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  bool ignores_block(std::size_t, std::size_t, std::size_t i_begin, std::size_t i_end,
                     std::size_t j_begin, std::size_t j_end) const {
    return (i_end - 1) / length < j_begin / length || (j_end - 1) / length < i_begin / length;
  }
#endif
  std::string name() const { return "documents_bias"; }
};

using heads = argus::tensor<
    float, argus::shape<argus::batch<1>, argus::head<4>, argus::seq<16>, argus::head_dim<8>>>;

void build(const heads& q, const heads& k) {
  (void)argus::mask(argus::scores(q, k), documents_bias{});
}

int main() { return 0; }
