// libFuzzer target: the run-time entry points of argus driven by fuzz bytes -- run-time
// lengths (0 included), batch, masks (and mask extents that may not fit), values (NaN,
// infinities, denormals, +-1e4 and ordinary numbers), moved-from operands and the output
// tensor of evaluate(e, policy, out), for attention written as expressions and for
// multi_head_attention modules (self- and cross-attention, non-finite weights, a value input
// longer than the key input). Every input either evaluates, fused and unfused, in agreement
// with the double reference (tests/support/agreement.hpp; a module's with the rules and
// bounds of tests/support/grad_agreement.hpp), or is rejected with argus::shape_error by
// every evaluator; anything else (a crash, a sanitizer report, another exception, a
// disagreement) aborts.
//
//   make test-fuzz                 (bounded run: the asan preset's build, ctest -L fuzz, 30 s)
//   make fuzz FUZZ_SECONDS=3600    (long run)
//
// Input layout: byte 0 the configuration (bit 7: a module), 1 batch, 2 seq_q, 3 seq_kv, 4 mask
// flags (a module: bit 6 self-attention, bit 7 non-finite weights too), 5 misuse flags, 6
// threads; the rest are element values, one byte each, cycled when short;
// for attention written as expressions, the two bytes after them set the causal mask's offset
// and window (byte_source::causal_offset, causal_window: top-left, bottom-right, or past either
// end; none, or 0 to seq_kv + 1 keys).
#include "../support/agreement.hpp"
#include "../support/fuzz_bytes.hpp"
#include "../support/fuzz_modules.hpp"
#include "../support/grad_agreement.hpp"
#include <argus/argus.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

using namespace argus;

namespace {

using test::byte_source;

[[noreturn]] void fail(const std::string& what) { test::fuzz_failure("attention_fuzzer", what); }

/// Runs body: the message of the shape_error it throws, nothing if it throws none; any other
/// exception fails.
template <class F>
std::optional<std::string> shape_error_of(F&& body) {
  try {
    body();
    return std::nullopt;
  } catch (const shape_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    fail(std::string("an exception other than shape_error: ") + e.what());
  }
}

template <class T, std::size_t H, std::size_t G, std::size_t DK, std::size_t DV>
void run(byte_source& in, std::size_t b, std::size_t sq, std::size_t skv, std::uint8_t masks,
         std::uint8_t misuse) {
  using q_shape = shape<batch<>, head<H>, seq<>, head_dim<DK>>;
  using k_shape = shape<batch<>, head<G>, seq<>, head_dim<DK>>;
  using v_shape = shape<batch<>, head<G>, seq<>, head_dim<DV>>;
  tensor<T, q_shape> q(b, sq);   // (B,H,SEQ_Q,D_K)
  tensor<T, k_shape> k(b, skv);  // (B,G,SEQ_KV,D_K)
  tensor<T, v_shape> v(b, skv);  // (B,G,SEQ_KV,D_V)
  // Misuse: masks whose extents are off by one (shape_error when the mask is applied).
  const std::size_t mq = sq + ((misuse & 1) ? 1 : 0), mkv = skv + ((misuse & 2) ? 1 : 0);
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, mkv);  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs(mq, mkv);         // (SEQ_Q,SEQ_KV)
  tensor<T, shape<seq<>, seq<>>> add(mq, skv);              // (SEQ_Q,SEQ_KV)
  for (auto& x : q) x = in.value<T>();
  for (auto& x : k) x = in.value<T>();
  for (auto& x : v) x = in.value<T>();
  in.key_padding(pad.data(), b, mkv);
  in.pair_mask(pairs.data(), mq, mkv);
  for (auto& x : add) x = in.value<T>();
  // Misuse: an operand that was moved from (its run-time extents become 0).
  std::optional<tensor<T, v_shape>> taken;
  if (misuse & 4) taken.emplace(std::move(v));

  auto check = [&](auto make) {
    std::optional<std::string> rejected[3];
    auto attempt = [&](int which, auto&& body) { rejected[which] = shape_error_of(body); };
    std::optional<decltype(evaluate_reference(make()))> ref;
    std::optional<decltype(evaluate(make(), fused))> f, u;
    attempt(0, [&] { ref.emplace(evaluate_reference(make())); });
    attempt(1, [&] { f.emplace(evaluate(make(), fused)); });
    attempt(2, [&] { u.emplace(evaluate(make(), unfused)); });
    if (rejected[0] || rejected[1] || rejected[2]) {
      if (!(rejected[0] && rejected[1] && rejected[2]))
        fail("rejected by some evaluators only: " +
             rejected[0].value_or(rejected[1].value_or(*rejected[2])));
      return;
    }
    const bool uses_add = (masks & 7) == 4 || (masks & 7) == 5;
    const double tol =
        test::attention_tolerance<T>(q, k, v, uses_add ? test::max_abs_finite(add) : 0.0);
    if (const std::string d = test::disagreement(*f, *ref, tol); !d.empty()) fail("fused: " + d);
    if (const std::string d = test::disagreement(*u, *ref, tol); !d.empty()) fail("unfused: " + d);
    // Into an existing tensor: of the right extents it gets the same values; of wrong
    // extents (misuse bit 8), shape_error.
    auto out = evaluate(make(), fused);
    if (misuse & 8) {
      decltype(out) wrong(out.shape());
      auto moved = std::move(wrong);  // wrong is now empty, or has no storage
      try {
        evaluate(make(), fused, wrong);
        if (out.size() != 0) fail("evaluate into a moved-from tensor did not throw");
      } catch (const shape_error&) {
      }
    }
  };
  auto s = [&] { return scores(q, k); };
  const std::ptrdiff_t offset = in.causal_offset(sq, skv);
  const causal_mask diagonal = causal_from(offset).windowed(in.causal_window(skv));
  switch (masks & 7) {
    case 0:
      return check([&] { return attend(softmax(s()), v); });
    case 1:
      return check([&] { return attend(softmax(mask(s(), diagonal)), v); });
    case 2:
      return check([&] { return attend(softmax(mask(s(), ignore_keys(pad))), v); });
    case 3:
      return check([&] { return attend(softmax(mask(s(), ignore_where(pairs), diagonal)), v); });
    case 4:
      return check([&] { return attend(softmax(mask(s(), add_to_scores(add))), v); });
    case 5:
      return check([&] {
        return attend(
            softmax(mask(s(), add_to_scores(add), ignore_keys(pad), ignore_where(pairs), diagonal)),
            v);
      });
    case 6:
      return check(
          [&] { return merge_heads(attend(softmax(mask(s(), diagonal, ignore_keys(pad))), v)); });
    default:  // not a chain the fused loop nest takes: unfused steps under the fused policy
      return check([&] { return attend(softmax(mask(s(), diagonal, diagonal)), v); });
  }
}

/// A module's forward pass, evaluate(m.forward(...), policy), against the rules: its inputs
/// and weights are values on which the projections are exact in T (byte_source::value(true)
/// and weight(); gradient_fuzzer.cpp says why), so test::module_gradients bounds every output
/// element. Misuse: masks one query or key longer (misuse & 3), a value input one row longer
/// than the key input (misuse & 4, cross-attention), evaluate into a moved-from output
/// (misuse & 8): shape_error from every evaluator.
template <class M>
void run_module(byte_source& in, std::size_t b, std::size_t sq, std::size_t skv, std::uint8_t flags,
                std::uint8_t misuse) {
  using T = typename M::value_type;
  constexpr bool can_self = test::module_inputs<M>::can_self;
  const bool self = can_self && (flags & 0x40) != 0;
  if (self) skv = sq;
  const bool longer_v = !self && (misuse & 4) != 0;
  M m;
  test::fill_module(m, in, (flags & 0x80) != 0);
  const auto served = prepack(m);  // the same weights packed once: the same bits, below
  const std::size_t mq = sq + ((misuse & 1) ? 1 : 0), mkv = skv + ((misuse & 2) ? 1 : 0);
  const test::module_inputs<M> in_(in, b, sq, skv, longer_v, mq, mkv);
  const auto& x_q = in_.x_q;
  const auto& x_k = in_.x_k;
  const auto& x_v = in_.x_v;

  auto check = [&](test::core_masks<T> used, const auto&... masks) {
    auto make = [&] {
      if constexpr (can_self)
        if (self) return m.forward(x_q, x_q, x_q, masks...);
      return m.forward(x_q, x_k, x_v, masks...);
    };
    std::optional<std::string> rejected[3];
    std::optional<decltype(evaluate(make(), fused))> out[2];
    rejected[0] = shape_error_of([&] { out[0].emplace(evaluate(make(), fused)); });
    rejected[1] = shape_error_of([&] { out[1].emplace(evaluate(make(), unfused)); });
    rejected[2] = rejected[0];  // self-attention: forward(x), the one-input form, too
    if constexpr (can_self)
      if (self)
        rejected[2] = shape_error_of([&] {
          auto one = evaluate(m.forward(x_q, masks...), fused);
          if (!out[0]) return;  // rejected above: reported below
          if (const std::string d = test::disagreement(one, *out[0], 0.0); !d.empty())
            fail("module: forward(x) and forward(x, x, x) differ: " + d);
        });
    // prepack(m): rejected exactly when m is, otherwise the same bits under each policy.
    auto make_packed = [&] {
      if constexpr (can_self)
        if (self) return served.forward(x_q, x_q, x_q, masks...);
      return served.forward(x_q, x_k, x_v, masks...);
    };
    for (int p = 0; p < 2; ++p) {
      std::optional<decltype(evaluate(make_packed(), fused))> packed;
      const std::optional<std::string> refused = shape_error_of([&] {
        packed.emplace(p == 0 ? evaluate(make_packed(), fused) : evaluate(make_packed(), unfused));
      });
      const char* policy = p == 0 ? "fused" : "unfused";
      if (refused.has_value() != rejected[p].has_value())
        fail(std::string("module, ") + policy + ": prepack(m) " +
             (refused ? "rejected what m accepts: " + *refused : "accepted what m rejects"));
      else if (packed)
        if (const std::string d = test::disagreement(*packed, *out[p], 0.0); !d.empty())
          fail(std::string("module, ") + policy + ": prepack(m) and m differ: " + d);
    }
    // Which misuse this chain meets: a mask one query longer (misuse & 1: pairs, add) or one
    // key longer (misuse & 2: padding, pairs), or the longer value input.
    // (From the chain, not from used's pointers: an empty mask's data() may be null.)
    const test::mask_chain_uses uses(flags);
    const bool bad = longer_v || (uses.pairs && (misuse & 3) != 0) ||
                     (uses.pad && (misuse & 2) != 0) || (uses.add && (misuse & 1) != 0);
    if (rejected[0] || rejected[1] || rejected[2]) {
      if (!(rejected[0] && rejected[1] && rejected[2]))
        fail("module: rejected by some evaluators only: " +
             rejected[0].value_or(rejected[1].value_or(*rejected[2])));
      if (!bad) fail("module: a valid input rejected: " + *rejected[0]);
      return;
    }
    if (bad) fail("module: extents that do not fit accepted");
    const test::module_gradients<T, M> want(
        m, b, sq, skv, x_q.data(), self ? x_q.data() : x_k.data(), self ? x_q.data() : x_v.data(),
        nullptr, used, 0.0, 0, true);
    for (int p = 0; p < 2; ++p)
      if (const std::string d = test::bounded_disagreement("out", *out[p], want.out); !d.empty())
        fail(std::string("module, ") + (p == 0 ? "fused" : "unfused") +
             (self ? ", self-attention: " : ": ") + d);
    // Into a moved-from tensor (misuse bit 8): shape_error unless it is empty anyway.
    if (misuse & 8) {
      auto wrong = *out[0];
      auto moved = std::move(wrong);
      try {
        evaluate(make(), fused, wrong);
        if (out[0]->size() != 0) fail("module: evaluate into a moved-from tensor did not throw");
      } catch (const shape_error&) {
      }
    }
  };
  test::with_mask_chain<T>(flags, in_.pad, in_.pairs, in_.add, check);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 7) return 0;
  byte_source in(data + 7, size - 7);
  const std::size_t b = data[1] % 4;  // 0..3
  const std::size_t sq = data[2] % 80, skv = data[3] % 80;
  // Decode-shaped now and then: few queries, 256 keys or more (keys split over threads).
  const std::size_t kv = (data[3] & 0x80) != 0 && sq <= 16 ? 256 + skv : skv;
  set_num_threads(1 + data[6] % 3);
  if (data[0] & 0x80) {  // modules: GQA, no biases and wider heads, cross-attention, double
    switch (data[0] % 4) {
      case 0:
        run_module<multi_head_attention<16, 4, mha_options{.kv_heads = 2}, float>>(
            in, b, sq, kv, data[4], data[5]);
        break;
      case 1:
        run_module<multi_head_attention<32, 2, mha_options{.bias = false}, float>>(
            in, b, sq, kv, data[4], data[5]);
        break;
      case 2:
        run_module<multi_head_attention<
            12, 3, mha_options{.d_k = 4, .d_v = 6, .kdim = 5, .vdim = 7}, float>>(in, b, sq, kv,
                                                                                  data[4], data[5]);
        break;
      default:
        run_module<multi_head_attention<8, 2, mha_options{}, double>>(in, b, sq, kv, data[4],
                                                                      data[5]);
        break;
    }
    return 0;
  }
  switch (data[0] % 4) {
    case 0:
      run<float, 4, 2, 8, 8>(in, b, sq, kv, data[4], data[5]);
      break;
    case 1:
      run<float, 2, 2, 64, 64>(in, b, sq, kv, data[4], data[5]);
      break;
    case 2:
      run<float, 3, 1, 5, 12>(in, b, sq, kv, data[4], data[5]);
      break;
    default:
      run<double, 2, 1, 4, 4>(in, b, sq, kv, data[4], data[5]);
      break;
  }
  return 0;
}
