// attend(p, v): P·V needs one value per key: seq_kv of the weights == seq of V.
// expect: k_and_v_lengths_agree
// expect-clang: extents_may_agree<12UL, 10UL>
#include <argus/expr/attention.hpp>
#include <argus/tensor/tensor.hpp>

using weights =
    argus::tensor<float,
                  argus::shape<argus::batch<2>, argus::head<8>, argus::seq<16>, argus::seq<12>>>;
template <std::size_t Length>
using values = argus::tensor<
    float, argus::shape<argus::batch<2>, argus::head<8>, argus::seq<Length>, argus::head_dim<8>>>;

void build(const weights& p, const values<12>& v, const values<10>& v_short) {
  (void)argus::attend(p, v);
#ifdef ARGUS_EXPECT_COMPILE_ERROR
  (void)argus::attend(p, v_short);  // 12 keys, 10 values
#else
  (void)v_short;
#endif
}

int main() { return 0; }
