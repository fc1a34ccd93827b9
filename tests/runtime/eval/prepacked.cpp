// Weights packed once (packed_weight, prepack): the same expression, the same result to the
// bit, fused and unfused, on every thread count -- only the copy of W into gemm panels on
// every call is gone. Modules with grouped heads, separate key/value widths, no biases,
// double; self- and cross-attention with masks; a packed_weight from a strided view; a
// packed copy that does not follow later changes of the module; explain() saying the panels
// are read; and a moved-from packed_weight rejected with a shape_error, not read.
// labels: threads
// Under TSan the d_model 512 module takes 30-45 s (most of it the instrumented kernels'
// reads), the other cases together 7 s:
// sanitized-split: *512ul*
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

using namespace argus;

namespace {

using test::randomize;
using test::rng;

template <class T, Shape S>
bool same_bits(const tensor<T, S>& a, const tensor<T, S>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a.data()[i] == b.data()[i])) return false;
  return true;
}

/// Evaluates `plain` and `packed` (the same expression over the module's weights and over
/// their packed copies) under both policies and 1-3 threads: equal to the bit.
template <class E, class P>
void same_results(const E& plain, const P& packed) {
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    BOOST_TEST(same_bits(evaluate(plain, fused), evaluate(packed, fused)),
               "fused, threads " << threads);
    BOOST_TEST(same_bits(evaluate(plain, unfused), evaluate(packed, unfused)),
               "unfused, threads " << threads);
    tensor<typename P::value_type, typename P::shape_type> into(packed.shape());
    evaluate(packed, fused, into);
    BOOST_TEST(same_bits(into, evaluate(plain, fused)), "fused into out, threads " << threads);
  }
  set_num_threads(0);
}

/// The module's weights at this file's scales: W_Q and W_K twice W_V's and W_O's.
template <class M>
void randomize_weights(M& m) {
  const double ws = 1.0 / std::sqrt(double(M::d_model));
  test::randomize_module(m, 2 * ws, ws, 0.1);
}

template <class T, std::size_t D, std::size_t H, mha_options O>
struct cfg {
  using module = multi_head_attention<D, H, O, T>;
};
using configs =
    std::tuple<cfg<float, 512, 8, mha_options{}>, cfg<float, 48, 6, mha_options{.kv_heads = 2}>,
               cfg<float, 96, 3, mha_options{.d_k = 20, .d_v = 36, .bias = false}>,
               cfg<float, 64, 4, mha_options{.kdim = 40, .vdim = 24}>,
               cfg<double, 40, 5, mha_options{.kv_heads = 1}>>;

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(prepacked_forward_is_forward_to_the_bit, C, configs) {
  using M = typename C::module;
  using T = typename M::value_type;
  M mha;
  randomize_weights(mha);
  const auto served = prepack(mha);
  static_assert(std::is_same_v<std::remove_const_t<decltype(served)>, prepacked_attention<M>>);
  BOOST_TEST(served.bytes() >
             (mha.w_q.size() + mha.w_k.size() + mha.w_v.size() + mha.w_o.size()) * sizeof(T));
  std::uniform_int_distribution<std::size_t> len(1, 140), bat(1, 2);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t b = bat(rng()), sq = len(rng()), skv = len(rng());
    tensor<T, shape<batch<>, seq<>, model<M::d_model>>> xq(b, sq), self(b, skv);
    tensor<T, shape<batch<>, seq<>, model<M::kdim>>> xk(b, skv);
    tensor<T, shape<batch<>, seq<>, model<M::vdim>>> xv(b, skv);
    randomize(xq), randomize(xk), randomize(xv), randomize(self);
    tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, skv);  // (B,SEQ_KV)
    for (auto& p : pad) p = std::bernoulli_distribution(0.3)(rng());
    BOOST_TEST_CONTEXT("batch " << b << ", seq_q " << sq << ", seq_kv " << skv) {
      same_results(mha.forward(xq, xk, xv), served.forward(xq, xk, xv));
      same_results(mha.forward(xq, xk, xv, ignore_keys(pad)),
                   served.forward(xq, xk, xv, ignore_keys(pad)));
      if constexpr (M::kdim == M::d_model && M::vdim == M::d_model) {
        same_results(mha.forward(self, causal), served.forward(self, causal));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_packed_weight_is_an_operand_like_a_tensor) {
  using W = tensor<float, shape<model<72>, model<100>>>;  // columns not a multiple of a panel
  W w;
  randomize(w);
  const packed_weight pw(w);
  static_assert(
      std::is_same_v<std::remove_const_t<decltype(pw)>, packed_weight<float, W::shape_type>>);
  BOOST_TEST(pw.extent(0) == 72u);
  BOOST_TEST(pw.extent(1) == 100u);
  for (std::size_t i = 0; i < 72; i += 7)
    for (std::size_t j = 0; j < 100; j += 9) BOOST_TEST(pw(i, j) == w(i, j));
  tensor<float, shape<batch<>, seq<>, model<72>>> x(3, 41);
  randomize(x);
  same_results(project(x, w), project(x, pw));
  tensor<float, shape<model<100>>> b;
  randomize(b);
  same_results(project(x, w, b), project(x, pw, b));
  same_results(split_heads<4>(project(x, w, b)), split_heads<4>(project(x, pw, b)));
  same_results(split_heads<5>(project(x, w)), split_heads<5>(project(x, pw)));
}

BOOST_AUTO_TEST_CASE(a_packed_weight_copies_a_strided_view) {
  // W's transpose, read through a view with swapped strides: the packed copy holds W itself.
  tensor<float, shape<model<48>, model<64>>> wt;  // Wᵀ, row-major
  tensor<float, shape<model<64>, model<48>>> w_rows;
  randomize(w_rows);
  for (std::size_t i = 0; i < 48; ++i)
    for (std::size_t j = 0; j < 64; ++j) wt(i, j) = w_rows(j, i);
  using S = shape<model<64>, model<48>>;
  const tensor_view<const float, S> transposed(wt.data(), layout<S>{S{}, {1, 64}});
  const packed_weight pw(transposed);
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = 0; j < 48; ++j) BOOST_TEST_REQUIRE(pw(i, j) == w_rows(i, j));
  tensor<float, shape<batch<>, seq<>, model<64>>> x(1, 30);
  randomize(x);
  same_results(project(x, w_rows), project(x, pw));
}

BOOST_AUTO_TEST_CASE(a_packed_module_is_a_copy) {
  multi_head_attention<32, 4> mha;
  randomize_weights(mha);
  tensor<float, shape<batch<>, seq<>, model<32>>> x(2, 17);
  randomize(x);
  const prepacked_attention served(mha);
  const auto before = evaluate(mha.forward(x), fused);
  for (auto& v : mha.w_o) v *= 2;  // an optimizer step, say
  BOOST_TEST(same_bits(evaluate(served.forward(x), fused), before));
  BOOST_TEST(!same_bits(evaluate(mha.forward(x), fused), before));
  const auto repacked = prepack(mha);  // named: forward on a temporary does not compile
  BOOST_TEST(same_bits(evaluate(repacked.forward(x), fused), evaluate(mha.forward(x), fused)));
  // Read only: no member of the packed module can be assigned.
  static_assert(!std::is_assignable_v<decltype((served.w_o)), decltype(served.w_o)>);
  static_assert(!std::is_assignable_v<decltype((served.b_o)), decltype(served.b_o)>);
  static_assert(!std::is_assignable_v<prepacked_attention<decltype(mha)>&,
                                      const prepacked_attention<decltype(mha)>&>);
}

namespace {
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
template <class E, class P>
std::string plan_text(const E& e, P policy) {
  std::ostringstream s;
  s << explain(e, policy);
  return s.str();
}
}  // namespace

BOOST_AUTO_TEST_CASE(explain_says_how_the_panels_are_read) {
  const std::string in_place = "packed panels read in place";
  {  // d_k 64: a multiple of every set's panel width (32 or 16 floats, 8 doubles in portable)
    multi_head_attention<256, 4> mha;
    randomize_weights(mha);
    tensor<float, shape<batch<>, seq<>, model<256>>> x(1, 8);
    const auto served = prepack(mha);
    for (const std::string& text :
         {plan_text(served.forward(x), fused), plan_text(served.forward(x), unfused)}) {
      BOOST_TEST(count(text, in_place) == 4u, text);
      BOOST_TEST(count(text, "packed weight (packed_weight)") == 4u, text);
    }
    BOOST_TEST(plan_text(mha.forward(x), fused).find("packed") == std::string::npos);
  }
  {  // d_k 16, half a panel on AVX-512: the split-heads products still read the panels,
     // their tiles straddling two heads (kernel::gemm_nn_split)
    multi_head_attention<64, 4> mha;
    randomize_weights(mha);
    tensor<float, shape<batch<>, seq<>, model<64>>> x(1, 8);
    const auto served = prepack(mha);
    BOOST_TEST(count(plan_text(served.forward(x), fused), in_place) == 4u);
    BOOST_TEST(count(plan_text(served.forward(x), unfused), in_place) == 4u);
  }
}

BOOST_AUTO_TEST_CASE(a_moved_from_packed_weight_is_an_error_not_garbage) {
  tensor<float, shape<model<16>, model<16>>> w;
  randomize(w);
  packed_weight pw(w);
  const packed_weight taken(std::move(pw));
  tensor<float, shape<batch<>, seq<>, model<16>>> x(1, 5);
  randomize(x);
  same_results(project(x, w), project(x, taken));
  BOOST_CHECK_THROW(evaluate(project(x, pw), fused),
                    shape_error);  // NOLINT(bugprone-use-after-move)
  BOOST_CHECK_THROW(evaluate(project(x, pw), unfused), shape_error);
  using packed = packed_weight<float, decltype(w)::shape_type>;
  BOOST_CHECK_THROW(packed(pw.view()), shape_error);
}
