// bench/models.cpp -- published module shapes, registered through argus/bench/register.hpp
// as a user registers their own (docs/how-to/benchmark_your_model.md).
//
// One attention layer of each, self-attention, batch 1, random weights and biases:
//   BM_model_bert_base   BERT-base: d_model 768, 12 heads (d_k 64), n 128 and 512
//   BM_model_gpt2_xl     GPT-2 XL: d_model 1600, 25 heads (d_k 64), n 2, 4 and 8 (a few
//                        tokens against 39 MiB of weights, 10 MiB each: more than the L3
//                        of most machines, so read from memory as in a model), 256 and 1024
//   BM_model_gqa_4096    a grouped-query layer of the Llama-2-70B kind: d_model 4096,
//                        32 query heads over 8 key/value heads (d_k 128), n 1 and 16
//                        (tokens being decoded against 160 MiB of weights, whose rows
//                        lie 16 KiB and 4 KiB apart), 256 and 1024
//   BM_model_phi2        Phi-2: d_model 2560, 32 heads (d_k 80, not a multiple of the
//                        AVX-512 kernels' 32-column panels), n 16 (a few tokens against
//                        100 MiB of weights, read from memory) and 256
// each under fused, fused on weights packed once (fused_prepacked: argus::prepack), unfused,
// eigen, and where built, the oneDNN and libtorch peers (not for
// the grouped-query layer, which neither peer runs), at threads 1 and 2. Counters:
// argus/bench/register.hpp. Built by the release preset only (bench/CMakeLists.txt): at the
// test presets' -Og these modules cost compile time and nothing that the smoke tests of
// attention_mha do not already prove.
// smoke-filter: BM_model_bert_base/[a-z_]+/n:128/.*/threads:1/
#include "attention_support.hpp"
#include <argus/argus.hpp>
#include <argus/bench/register.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

const bool registered = [] {
  using argus::mha_options;
  using argus::multi_head_attention;
  namespace ab = argus::bench;
  ab::add_peak_rows();
  ab::add_peer_context();
  // fused, unfused and eigen first; the library peers after every other row, since libtorch,
  // once loaded, stays resident (peers/peers.hpp).
  for (const bool peers : {false, true}) {
    const ab::module_rows base{.fused = !peers, .unfused = !peers};
    auto rows = [&](std::vector<std::int64_t> seq, bool peers_can_run,
                    ab::other_evaluator prepacked) {
      ab::module_rows r = base;
      r.seq = std::move(seq);
      if (!peers)
        r.others = {std::move(prepacked), ab::eigen_evaluator()};
      else if (peers_can_run)
        r.others = ab::library_peer_evaluators();
      return r;
    };
    using bert_base = multi_head_attention<768, 12>;
    using gpt2_xl = multi_head_attention<1600, 25>;
    using gqa_4096 = multi_head_attention<4096, 32, mha_options{.kv_heads = 8}>;
    using phi2 = multi_head_attention<2560, 32>;
    ab::register_module<bert_base>("BM_model_bert_base",
                                   rows({128, 512}, true, ab::prepacked_evaluator<bert_base>()));
    ab::register_module<gpt2_xl>(
        "BM_model_gpt2_xl", rows({2, 4, 8, 256, 1024}, true, ab::prepacked_evaluator<gpt2_xl>()));
    ab::register_module<gqa_4096>(
        "BM_model_gqa_4096", rows({1, 16, 256, 1024}, false, ab::prepacked_evaluator<gqa_4096>()));
    ab::register_module<phi2>("BM_model_phi2",
                              rows({16, 256}, true, ab::prepacked_evaluator<phi2>()));
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
