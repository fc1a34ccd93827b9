// libFuzzer target: training through the run-time entry points, forward_for_training and
// backward, driven by fuzz bytes, on attention written as expressions (the core) and on
// multi_head_attention modules -- run-time lengths (0 included, and long enough for two of the
// fused backward's 64-query and 256-key tiles), batch, every mask kind (and the merged-heads
// form a module's core takes), dropout, self-attention, values (NaN, infinities, denormals,
// large and ordinary numbers) in the inputs, the additive mask and dO (and in a module's
// weights), and misuse: a dO whose run-time extents do not fit, a dropout rate outside [0, 1],
// a value input longer than the key input. Every input either trains, fused and unfused, with
// an output and gradients that agree with the rules of docs/reference/semantics.md computed in
// double (tests/support/grad_agreement.hpp: which elements are finite exactly, finite ones
// within a bound that follows the float arithmetic), or is rejected by both evaluators with
// the same exception, argus::shape_error for extents that do not fit and std::invalid_argument
// for a bad rate; anything else (a crash, a sanitizer report, another exception, a
// disagreement) aborts.
//
//   make test-fuzz                                       (bounded run: the asan preset, 30 s)
//   make fuzz FUZZER=gradient_fuzzer FUZZ_SECONDS=3600   (long run)
//
// Input layout: byte 0 the configuration (bit 7: a module), 1 batch, 2 seq_q, 3 seq_kv, 4 mask
// flags (a module: bit 6 self-attention, bit 7 non-finite weights too), 5 misuse flags, 6
// threads, 7 dropout; the rest are element values, one byte each, cycled when short;
// for attention written as expressions, the two bytes after them set the causal mask's offset
// and window (byte_source::causal_offset, causal_window: top-left, bottom-right, or past either
// end; none, or 0 to seq_kv + 1 keys).
#include "../support/fuzz_bytes.hpp"
#include "../support/fuzz_modules.hpp"
#include "../support/grad_agreement.hpp"
#include <argus/argus.hpp>
#include <argus/grad/training.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

using namespace argus;

namespace {

using test::byte_source;

[[noreturn]] void fail(const std::string& what) { test::fuzz_failure("gradient_fuzzer", what); }

/// What an attempt ended with: nothing thrown, or the kind and message of what was.
struct outcome {
  enum kind { ok, shape, argument } k = ok;
  std::string what;
};

template <class F>
outcome attempt(F&& body) {
  try {
    body();
    return {};
  } catch (const shape_error& e) {
    return {outcome::shape, e.what()};
  } catch (const std::invalid_argument& e) {
    return {outcome::argument, e.what()};
  } catch (const std::exception& e) {
    fail(std::string("an exception other than shape_error or invalid_argument: ") + e.what());
  }
}

/// Dropout: none (byte < 128), a rate in (0, 1] or, with misuse & 4, one outside [0, 1].
std::optional<argus::dropout> dropout_of(std::uint8_t misuse, std::uint8_t drop_byte) {
  if (misuse & 4)
    return argus::dropout{
        (drop_byte & 1) ? 1.0 + double(drop_byte) / 64 : std::numeric_limits<double>::quiet_NaN(),
        drop_byte};
  if (drop_byte >= 128)
    return argus::dropout{double(drop_byte - 127) / 128, std::uint64_t(drop_byte) * 7919u};
  return std::nullopt;
}

template <class T, std::size_t H, std::size_t G, std::size_t DK, std::size_t DV>
void run(byte_source& in, std::size_t b, std::size_t sq, std::size_t skv, std::uint8_t masks,
         std::uint8_t misuse, std::uint8_t drop_byte) {
  using q_shape = shape<batch<>, head<H>, seq<>, head_dim<DK>>;
  using k_shape = shape<batch<>, head<G>, seq<>, head_dim<DK>>;
  using v_shape = shape<batch<>, head<G>, seq<>, head_dim<DV>>;
  using o_shape = shape<batch<>, head<H>, seq<>, head_dim<DV>>;
  tensor<T, q_shape> q(b, sq);   // (B,H,SEQ_Q,D_K)
  tensor<T, k_shape> k(b, skv);  // (B,G,SEQ_KV,D_K)
  tensor<T, v_shape> v(b, skv);  // (B,G,SEQ_KV,D_V)
  // Misuse: dO one query longer (misuse & 1) or one batch item more (misuse & 2) than the
  // output.
  const std::size_t dq_seq = sq + ((misuse & 1) ? 1 : 0), d_batch = b + ((misuse & 2) ? 1 : 0);
  tensor<T, o_shape> dout(d_batch, dq_seq);                 // (B,H,SEQ_Q,D_V)
  tensor<std::uint8_t, shape<batch<>, seq<>>> pad(b, skv);  // (B,SEQ_KV)
  tensor<bool, shape<seq<>, seq<>>> pairs(sq, skv);         // (SEQ_Q,SEQ_KV)
  tensor<T, shape<seq<>, seq<>>> add(sq, skv);              // (SEQ_Q,SEQ_KV)
  for (auto& x : q) x = in.value<T>();
  for (auto& x : k) x = in.value<T>();
  for (auto& x : v) x = in.value<T>();
  for (auto& x : dout) x = in.value<T>();
  in.key_padding(pad.data(), b, skv);
  in.pair_mask(pairs.data(), sq, skv);
  for (auto& x : add) x = in.value<T>();
  const std::optional<argus::dropout> drop = dropout_of(misuse, drop_byte);
  const bool must_reject = (misuse & 7) != 0;

  // make() builds the expression; Merged: it is merge_heads of a core, whose output and dO
  // are (B,SEQ_Q,H*D_V) (held to the rules in the head-major layout).
  auto check = [&]<bool Merged = false>(auto make, test::core_masks<T> used,
                                        std::bool_constant<Merged> = {}) {
    using out_t = std::remove_cvref_t<decltype(evaluate(make(), fused))>;
    // Element (bb, h, i, c) of a head-major (B,H,SEQ,D_V) array, in out_t's layout.
    auto at = [&](std::size_t bb, std::size_t h, std::size_t i, std::size_t c, std::size_t n) {
      return Merged ? (bb * n + i) * H * DV + h * DV + c : ((bb * H + h) * n + i) * DV + c;
    };
    out_t d_o(d_batch, dq_seq);  // dO in the expression's output layout
    for (std::size_t bb = 0; bb < d_batch; ++bb)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < dq_seq; ++i)
          for (std::size_t c = 0; c < DV; ++c)
            d_o.data()[at(bb, h, i, c, dq_seq)] = dout(bb, h, i, c);
    struct result {
      tensor<T, o_shape> out;
      tensor<T, q_shape> dq;
      tensor<T, k_shape> dk;
      tensor<T, v_shape> dv;
    };
    auto train = [&](auto policy, std::optional<result>& r) {
      return attempt([&] {
        auto tape = drop ? forward_for_training(make(), policy, *drop)
                         : forward_for_training(make(), policy);
        auto g = backward(tape, d_o, policy);
        tensor<T, o_shape> out(b, sq);
        for (std::size_t bb = 0; bb < b; ++bb)
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < sq; ++i)
              for (std::size_t c = 0; c < DV; ++c)
                out(bb, h, i, c) = tape.output().data()[at(bb, h, i, c, sq)];
        r.emplace(result{std::move(out), std::move(g.q), std::move(g.k), std::move(g.v)});
      });
    };
    std::optional<result> f, u;
    const outcome of = train(fused, f), ou = train(unfused, u);
    if (of.k != ou.k)
      fail("fused and unfused end differently: " + (of.k == outcome::ok ? ou.what : of.what));
    if (of.k != outcome::ok) {
      if (!must_reject) fail("a valid input rejected: " + of.what);
      if ((misuse & 4) && of.k != outcome::argument) fail("a bad rate not named: " + of.what);
      if (!(misuse & 4) && of.k != outcome::shape) fail("a bad dO not named: " + of.what);
      return;
    }
    if (must_reject) fail("a dO that does not fit, or a bad rate, accepted");
    const test::core_gradients<T> want(b, H, G, sq, skv, DK, DV, q.data(), k.data(), v.data(),
                                       dout.data(), used, drop ? drop->rate : 0.0,
                                       drop ? drop->seed : 0);
    for (const auto* r : {&*f, &*u}) {
      const char* who = r == &*f ? "fused" : "unfused";
      for (const std::string& d : {test::bounded_disagreement("out", r->out, want.out),
                                   test::bounded_disagreement("dq", r->dq, want.dq),
                                   test::bounded_disagreement("dk", r->dk, want.dk),
                                   test::bounded_disagreement("dv", r->dv, want.dv)})
        if (!d.empty()) fail(std::string(who) + ": " + d);
    }
  };
  auto s = [&] { return scores(q, k); };
  test::core_masks<T> m;
  m.causal_offset = in.causal_offset(sq, skv);  // used where m.causal is set
  m.causal_window = in.causal_window(skv);
  const causal_mask diagonal = causal_from(m.causal_offset).windowed(m.causal_window);
  switch (masks % 7) {
    case 0:
      return check([&] { return attend(softmax(s()), v); }, m);
    case 1:
      m.causal = true;
      return check([&] { return attend(softmax(mask(s(), diagonal)), v); }, m);
    case 2:
      m.pad = pad.data();
      return check([&] { return attend(softmax(mask(s(), ignore_keys(pad))), v); }, m);
    case 3:
      m.pairs = pairs.data(), m.causal = true;
      return check([&] { return attend(softmax(mask(s(), ignore_where(pairs), diagonal)), v); }, m);
    case 4:
      m.add = add.data();
      return check([&] { return attend(softmax(mask(s(), add_to_scores(add))), v); }, m);
    case 5:
      m.add = add.data(), m.pad = pad.data(), m.pairs = pairs.data(), m.causal = true;
      return check(
          [&] {
            return attend(softmax(mask(s(), add_to_scores(add), ignore_keys(pad),
                                       ignore_where(pairs), diagonal)),
                          v);
          },
          m);
    default:  // merged heads: (B,SEQ_Q,H*D_V), as a module's core
      m.causal = true, m.pad = pad.data();
      return check(
          [&] { return merge_heads(attend(softmax(mask(s(), diagonal, ignore_keys(pad))), v)); }, m,
          std::true_type{});
  }
}

// ---- modules --------------------------------------------------------------------------
// A module's projections round in T, and the rules' bounds (grad_agreement.hpp) take the
// core's inputs as exact. So a module's inputs, dO and weights are values on which they are:
// inputs and dO multiples of 1/16 up to 8 in magnitude, or +-1024, -0, NaN, +-inf; weights
// and biases multiples of 1/8 up to 2 (NaN and +-inf too where the flags say so). With
// widths up to 32, x·W + b then stays below 2^17 in steps of 2^-7 (fewer than 24
// significant bits), so Q, K, V and dA = dO·W_oᵀ are exact whatever the order of the sums,
// and the core's inputs are what the rules take; every later product carries the core's
// bounds (module_gradients).

template <class T, std::size_t W>
using activation = tensor<T, shape<batch<>, seq<>, model<W>>>;

template <class M>
void run_module(byte_source& in, std::size_t b, std::size_t sq, std::size_t skv, std::uint8_t flags,
                std::uint8_t misuse, std::uint8_t drop_byte) {
  using T = typename M::value_type;
  constexpr bool can_self = test::module_inputs<M>::can_self;
  const bool self = can_self && (flags & 0x40) != 0;
  if (self) skv = sq;
  const bool longer_v = !self && (misuse & 8) != 0;  // x_v one row longer than x_k
  M m;
  const bool wild = (flags & 0x80) != 0;
  test::fill_module(m, in, wild);
  const test::module_inputs<M> in_(in, b, sq, skv, longer_v, sq, skv);
  const auto& x_q = in_.x_q;
  const auto& x_k = in_.x_k;
  const auto& x_v = in_.x_v;
  const std::size_t dq_seq = sq + ((misuse & 1) ? 1 : 0), d_batch = b + ((misuse & 2) ? 1 : 0);
  activation<T, M::d_model> dout(d_batch, dq_seq);
  for (auto& x : dout) x = in.value<T>(true);
  const std::optional<argus::dropout> drop = dropout_of(misuse, drop_byte);
  const bool must_reject = (misuse & 7) != 0 || longer_v;

  auto check = [&](test::core_masks<T> used, const auto&... masks) {
    std::optional<test::module_gradients<T, M>> want;
    if (!must_reject)
      want.emplace(m, b, sq, skv, x_q.data(), self ? x_q.data() : x_k.data(),
                   self ? x_q.data() : x_v.data(), dout.data(), used, drop ? drop->rate : 0.0,
                   drop ? drop->seed : 0);
    auto train = [&](auto policy, const char* who) {
      return attempt([&] {
        auto forward = [&](const auto&... options) {
          if constexpr (can_self)  // the same tensor three times, as forward(x) passes it
            if (self) return forward_for_training(m, policy, x_q, x_q, x_q, options...);
          return forward_for_training(m, policy, x_q, x_k, x_v, options...);
        };
        auto tape = drop ? forward(masks..., *drop) : forward(masks...);
        auto g = backward(tape, dout, policy);
        if (!want) return;  // accepted misuse: reported below
        const auto agree = [&](const char* name, const auto& got, const test::bounded_values& w) {
          const std::string d = test::bounded_disagreement(name, got, w);
          if (!d.empty())
            fail(std::string("module, ") + who + (self ? ", self-attention: " : ": ") + d);
        };
        agree("out", tape.output(), want->out);
        agree("x_q", g.x_q, want->x_q), agree("x_k", g.x_k, want->x_k);
        agree("x_v", g.x_v, want->x_v);
        agree("w_q", g.w_q, want->w_q), agree("w_k", g.w_k, want->w_k);
        agree("w_v", g.w_v, want->w_v), agree("w_o", g.w_o, want->w_o);
        if constexpr (M::has_bias) {
          agree("b_q", g.b_q, want->b_q), agree("b_k", g.b_k, want->b_k);
          agree("b_v", g.b_v, want->b_v), agree("b_o", g.b_o, want->b_o);
        }
      });
    };
    const outcome of = train(fused, "fused"), ou = train(unfused, "unfused");
    if (of.k != ou.k)
      fail("module: fused and unfused end differently: " +
           (of.k == outcome::ok ? ou.what : of.what));
    if (of.k != outcome::ok) {
      if (!must_reject) fail("module: a valid input rejected: " + of.what);
      // forward_for_training checks the inputs' extents before the rate.
      const auto expected = longer_v       ? outcome::shape
                            : (misuse & 4) ? outcome::argument
                                           : outcome::shape;
      if (of.k != expected) fail("module: misuse named as another: " + of.what);
      return;
    }
    if (must_reject) fail("module: extents that do not fit, or a bad rate, accepted");
  };
  test::with_mask_chain<T>(flags, in_.pad, in_.pairs, in_.add, check);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  byte_source in(data + 8, size - 8);
  const std::size_t b = data[1] % 3;  // 0..2
  // Lengths up to 79, or past one tile of the fused backward (64 queries, 256 keys).
  const std::size_t sq = data[2] % 80 + ((data[2] & 0x80) != 0 ? 60 : 0);
  const std::size_t skv = data[3] % 80 + ((data[3] & 0x80) != 0 ? 240 : 0);
  set_num_threads(1 + data[6] % 3);
  if (data[0] & 0x80) {  // modules: GQA, no biases and wider heads, cross-attention, double
    switch (data[0] % 4) {
      case 0:
        run_module<multi_head_attention<16, 4, mha_options{.kv_heads = 2}, float>>(
            in, b, sq, skv, data[4], data[5], data[7]);
        break;
      case 1:
        run_module<multi_head_attention<32, 2, mha_options{.bias = false}, float>>(
            in, b, sq, skv, data[4], data[5], data[7]);
        break;
      case 2:
        run_module<multi_head_attention<
            12, 3, mha_options{.d_k = 4, .d_v = 6, .kdim = 5, .vdim = 7}, float>>(
            in, b, sq, skv, data[4], data[5], data[7]);
        break;
      default:
        run_module<multi_head_attention<8, 2, mha_options{}, double>>(in, b, sq, skv, data[4],
                                                                      data[5], data[7]);
        break;
    }
    return 0;
  }
  switch (data[0] % 4) {
    case 0:
      run<float, 4, 2, 8, 8>(in, b, sq, skv, data[4], data[5], data[7]);
      break;
    case 1:
      run<float, 2, 2, 64, 64>(in, b, sq, skv, data[4], data[5], data[7]);
      break;
    case 2:
      run<float, 3, 1, 5, 12>(in, b, sq, skv, data[4], data[5], data[7]);
      break;
    default:
      run<double, 2, 1, 4, 4>(in, b, sq, skv, data[4], data[5], data[7]);
      break;
  }
  return 0;
}
