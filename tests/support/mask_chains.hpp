// tests/support/mask_chains.hpp -- test support: the mask chains the fuzzers put on a
// module's forward pass, each with what the rules of grad_agreement.hpp are told about it.
// No Boost.Test here.
#pragma once

#include "grad_agreement.hpp"
#include <argus/argus.hpp>

#include <cstddef>

namespace argus::test {

/// Which masks chain `chain` (taken % 6) uses: none, causal, padding, pairs + causal,
/// additive, all four.
struct mask_chain_uses {
  bool pad, pairs, add;
  explicit mask_chain_uses(std::size_t chain)
      : pad(chain % 6 == 2 || chain % 6 == 5),
        pairs(chain % 6 == 3 || chain % 6 == 5),
        add(chain % 6 == 4 || chain % 6 == 5) {}
};

/// f(used, masks...) with the masks of chain `chain` (mask_chain_uses) over pad (B,SEQ_KV),
/// pairs (SEQ_Q,SEQ_KV) and add (SEQ_Q,SEQ_KV), `used` naming them for core_gradients.
template <class T, class Pad, class Pairs, class Add, class F>
void with_mask_chain(std::size_t chain, const Pad& pad, const Pairs& pairs, const Add& add, F&& f) {
  core_masks<T> used;
  switch (chain % 6) {
    case 0:
      return f(used);
    case 1:
      used.causal = true;
      return f(used, causal);
    case 2:
      used.pad = pad.data();
      return f(used, ignore_keys(pad));
    case 3:
      used.pairs = pairs.data(), used.causal = true;
      return f(used, ignore_where(pairs), causal);
    case 4:
      used.add = add.data();
      return f(used, add_to_scores(add));
    default:
      used.add = add.data(), used.pad = pad.data(), used.pairs = pairs.data(), used.causal = true;
      return f(used, add_to_scores(add), ignore_keys(pad), ignore_where(pairs), causal);
  }
}

}  // namespace argus::test
