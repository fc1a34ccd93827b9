// The law of every fused pattern (tests/support/fused_law.hpp): evaluated fused, an
// expression equals its unfused evaluation within tolerance, for every configuration --
// randomised shapes, masks, run-time lengths and thread counts. This file: the grouped-query
// modules and the fully masked rows, which the TSan stage runs too (on 1-3 threads;
// tests/runtime/eval/concurrent_callers.cpp covers decode under TSan);
// fused_vs_unfused_forms.cpp: the other configurations and forms, and the fallback of
// patterns that do not match to unfused steps (never to a wrong answer).
// labels: threads
#include "../../support/fused_law.hpp"
#include "../../support/random_tensors.hpp"
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>

using namespace argus;

namespace {

using test::cfg;
using test::law;
using test::randomize;

}  // namespace

using grouped_configs = std::tuple<cfg<float, 48, 6, 2, 8, 8>, cfg<float, 32, 4, 1, 12, 20>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(module_forward_fused_equals_unfused, C, grouped_configs) {
  test::module_forward_law<C>();
}

BOOST_AUTO_TEST_CASE(fully_masked_rows_give_zeros_fused) {
  multi_head_attention<32, 2> mha;  // weights ~ 1/sqrt(d_model): logits of order 1, as in practice
  const double ws = 1.0 / std::sqrt(32.0);
  randomize(mha.w_q, ws), randomize(mha.w_k, ws), randomize(mha.w_v, ws), randomize(mha.w_o, ws);
  tensor<float, shape<batch<>, seq<>, model<32>>> x(2, 9);  // (B,SEQ,D_MODEL)
  randomize(x);
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad(2, 9);  // (B,SEQ_KV)
  for (std::size_t j = 0; j < 9; ++j) pad(1, j) = 1;      // item 1: every key ignored
  const auto y =
      project(merge_heads(attend(softmax(mask(scores(split_heads<2>(project(x, mha.w_q)),
                                                     split_heads<2>(project(x, mha.w_k))),
                                              ignore_keys(pad))),
                                 split_heads<2>(project(x, mha.w_v)))),
              mha.w_o);
  law(y);
  const auto heads =
      evaluate(merge_heads(attend(softmax(mask(scores(split_heads<2>(project(x, mha.w_q)),
                                                      split_heads<2>(project(x, mha.w_k))),
                                               ignore_keys(pad))),
                                  split_heads<2>(project(x, mha.w_v)))),
               fused);
  for (std::size_t i = 0; i < 9; ++i)
    for (std::size_t j = 0; j < 32; ++j) BOOST_TEST(heads(1, i, j) == 0.0f);
}
