// explain(): the plan of an expression under each policy -- which steps fuse, and the bytes
// each plan materialises (the unfused plan holds every head's seq_q × seq_kv scores).
#include <argus/argus.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

using namespace argus;

BOOST_AUTO_TEST_CASE(fused_and_unfused_plans_of_the_paper_configuration) {
  multi_head_attention<512, 8> mha;
  const std::size_t n = 256;
  tensor<float, shape<batch<>, seq<>, model<512>>> x(2, n);  // (B,SEQ,D_MODEL)
  const auto y = mha.forward(x, causal);
  const plan u = explain(y, unfused);
  const plan f = explain(y, fused);
  const std::size_t scores_bytes = 2 * 8 * n * n * sizeof(float);
  const std::size_t activation_bytes = 2 * n * 512 * sizeof(float);
  // Unfused: 4 projections, 3 split copies, scores, attend, merge copy.
  BOOST_TEST(u.materialised_bytes() == scores_bytes + 9 * activation_bytes);
  // Fused: 4 projections and the attention output, nothing quadratic.
  BOOST_TEST(f.materialised_bytes() == 5 * activation_bytes);
  // Into the caller's tensor, the output projection (the root) writes there: one fewer.
  BOOST_TEST(f.steps.front().into_out);
  BOOST_TEST(u.steps.front().into_out);
  BOOST_TEST(f.materialised_bytes_into_out() == 4 * activation_bytes);
  BOOST_TEST(u.materialised_bytes_into_out() == scores_bytes + 8 * activation_bytes);
  for (std::size_t i = 1; i < f.steps.size(); ++i) BOOST_TEST(!f.steps[i].into_out);
  const std::string us = u.to_string(), fs = f.to_string();
  BOOST_TEST(fs.find("(written straight into out by evaluate(e, p, out))") != std::string::npos);
  BOOST_TEST(us.find("[fused]") == std::string::npos);
  BOOST_TEST(us.find("scores") != std::string::npos);
  BOOST_TEST(fs.find("[fused] attention core as one loop nest") != std::string::npos);
  BOOST_TEST(fs.find("masks causal") != std::string::npos);
  BOOST_TEST(fs.find("no merge copy") != std::string::npos);
  BOOST_TEST(fs.find("written straight into (B,H,SEQ,D_K)") != std::string::npos);
  BOOST_TEST(fs.find("scores Q") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(split_heads_of_an_input_is_a_view) {
  tensor<float, shape<batch<1>, seq<>, model<16>>> x(5);  // (1,SEQ,16)
  const plan f = explain(
      attend(softmax(scores(split_heads<2>(x), split_heads<2>(x))), split_heads<2>(x)), fused);
  BOOST_TEST(f.to_string().find("strided view, no copy") != std::string::npos);
  BOOST_TEST(f.materialised_bytes() == 5 * 16 * sizeof(float));  // the attention output only
  BOOST_TEST(f.materialised_bytes_into_out() == 0u);  // written into out by the loop nest
}

BOOST_AUTO_TEST_CASE(a_chain_the_loop_nest_does_not_take_is_explained_as_unfused) {
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<8>>> q(10), k(10), v(10);  // (1,2,SEQ,8)
  const plan f = explain(attend(softmax(mask(scores(q, k), causal, causal)), v), fused);
  BOOST_TEST(f.to_string().find("[fused]") == std::string::npos);
  BOOST_TEST(f.materialised_bytes() == (2 * 10 * 10 + 2 * 10 * 8) * sizeof(float));
  // The unfused weighted sum of a mask chain writes into evaluate(e, p, out)'s out too (unless
  // out shares a byte with P, V or a mask): only the scores are allocated.
  BOOST_TEST(f.steps.front().into_out);
  BOOST_TEST(f.materialised_bytes_into_out() == 2 * 10 * 10 * sizeof(float));
}

BOOST_AUTO_TEST_CASE(the_unfused_weighted_sum_of_an_unmasked_core_writes_into_out) {
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<8>>> q(10), k(10), v(10);  // (1,2,SEQ,8)
  const plan u = explain(attend(softmax(scores(q, k)), v), unfused);
  const std::size_t out_bytes = 2 * 10 * 8 * sizeof(float);
  BOOST_TEST(u.steps.front().into_out);
  BOOST_TEST(u.materialised_bytes_into_out() == u.materialised_bytes() - out_bytes);
  BOOST_TEST(u.to_string().find("(written straight into out by evaluate(e, p, out))") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_plan_names_the_instruction_set_the_kernels_run) {
  tensor<float, shape<batch<1>, head<2>, seq<>, head_dim<8>>> q(10), k(10), v(10);  // (1,2,SEQ,8)
  const auto y = attend(softmax(scores(q, k)), v);
  for (const plan& p : {explain(y, unfused), explain(y, fused)}) {
    BOOST_TEST((p.instruction_set == kernel::active_isa()));
    BOOST_TEST(p.chosen_at_run_time == kernel::isa_chosen_at_run_time);
    const std::string want =
        std::string("kernels: ") + kernel::isa_name(kernel::active_isa()) + " (" +
        std::to_string(kernel::isa_register_bytes(kernel::active_isa())) + "-byte registers), " +
        (kernel::isa_chosen_at_run_time ? "chosen at run time"
                                        : "the set this program is compiled for") +
        "\n";
    const std::string s = p.to_string();
    BOOST_TEST_REQUIRE(s.size() >= want.size());
    BOOST_TEST(s.substr(s.size() - want.size()) == want);  // the plan's last line
  }
}
