// A mask kind of one's own that ignores pairs says which blocks of pairs it ignores whole, but
// its ignores_block leaves out the batch item and the head: the loop nest would never call it.
// expect: ignores_block_takes_b_h_and_two_ranges
// expect: bool ignores_block\(b, h, i_begin, i_end, j_begin, j_end\) const
#include <argus/argus.hpp>

#include <cstddef>
#include <string>

struct documents {
  using mask_effect = argus::ignores_pairs;
  std::size_t length = 4;
  bool ignores(std::size_t, std::size_t, std::size_t i, std::size_t j) const {
    return i / length != j / length;
  }
  bool apart(std::size_t i_begin, std::size_t i_end, std::size_t j_begin, std::size_t j_end) const {
    return (i_end - 1) / length < j_begin / length || (j_end - 1) / length < i_begin / length;
  }
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  bool ignores_block(std::size_t i_begin, std::size_t i_end, std::size_t j_begin,
                     std::size_t j_end) const {
    return apart(i_begin, i_end, j_begin, j_end);
  }
#else
  bool ignores_block(std::size_t, std::size_t, std::size_t i_begin, std::size_t i_end,
                     std::size_t j_begin, std::size_t j_end) const {
    return apart(i_begin, i_end, j_begin, j_end);
  }
#endif
  std::string name() const { return "documents"; }
};

using heads = argus::tensor<
    float, argus::shape<argus::batch<1>, argus::head<4>, argus::seq<16>, argus::head_dim<8>>>;

void build(const heads& q, const heads& k) { (void)argus::mask(argus::scores(q, k), documents{}); }

int main() { return 0; }
