// tests/support/fuzz_modules.hpp -- test support: what the fuzzers (tests/fuzz) feed a
// multi_head_attention module -- weights, inputs and masks from fuzz bytes, and the mask
// chains, each with what the rules of grad_agreement.hpp are told about it. No Boost.Test
// here.
#pragma once

#include "fuzz_bytes.hpp"
#include "grad_agreement.hpp"
#include <argus/argus.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace argus::test {

/// Every weight and bias of a multi_head_attention module M from `in` (byte_source::weight).
template <class M>
void fill_module(M& m, byte_source& in, bool non_finite) {
  const auto fill = [&](auto&... tensors) {
    (
        [&](auto& t) {
          for (auto& x : t) x = in.weight<typename M::value_type>(non_finite);
        }(tensors),
        ...);
  };
  fill(m.w_q, m.w_k, m.w_v, m.w_o);
  if constexpr (M::has_bias) fill(m.b_q, m.b_k, m.b_v, m.b_o);
}

/// A module's inputs and masks from fuzz bytes: x_q (B,SQ,D_MODEL), x_k (B,SKV,KDIM) and x_v
/// (B,SKV,VDIM; one row longer with `longer_v`, a misuse) of byte_source::value(true), on
/// which the projections stay exact; pad (B,MKV), pairs (MQ,MKV) and add (MQ,SKV), mq and mkv
/// being seq_q and seq_kv unless a misuse makes the masks' extents wrong.
template <class M>
struct module_inputs {
  using T = typename M::value_type;
  static_assert(
      !std::is_same_v<T, float> || (M::d_model <= 32 && M::kdim <= 32 && M::vdim <= 32),
      "wider float modules round in their projections: the rules' bounds need exact ones");
  /// Whether forward(x) (one input for queries, keys and values) fits M.
  static constexpr bool can_self = M::kdim == M::d_model && M::vdim == M::d_model;
  tensor<T, shape<batch<>, seq<>, model<M::d_model>>> x_q;
  tensor<T, shape<batch<>, seq<>, model<M::kdim>>> x_k;
  tensor<T, shape<batch<>, seq<>, model<M::vdim>>> x_v;
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad;
  tensor<bool, shape<seq<>, seq<>>> pairs;
  tensor<T, shape<seq<>, seq<>>> add;

  module_inputs(byte_source& in, std::size_t b, std::size_t sq, std::size_t skv, bool longer_v,
                std::size_t mq, std::size_t mkv)
      : x_q(b, sq),
        x_k(b, skv),
        x_v(b, skv + (longer_v ? 1 : 0)),
        pad(b, mkv),
        pairs(mq, mkv),
        add(mq, skv) {
    for (auto& x : x_q) x = in.value<T>(true);
    for (auto& x : x_k) x = in.value<T>(true);
    for (auto& x : x_v) x = in.value<T>(true);
    in.key_padding(pad.data(), b, mkv);
    in.pair_mask(pairs.data(), mq, mkv);
    for (auto& x : add) x = in.value<T>();
  }
};

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
