// libFuzzer target: the run-time entry points of argus driven by fuzz bytes -- run-time
// lengths (0 included), batch, masks (and mask extents that may not fit), values (NaN,
// infinities, denormals, +-1e4 and ordinary numbers), moved-from operands and the output
// tensor of evaluate(e, policy, out). Every input either evaluates, fused and unfused, in
// agreement with the double reference (tests/support/agreement.hpp), or is rejected with
// argus::shape_error by every evaluator; anything else (a crash, a sanitizer report, another
// exception, a disagreement) aborts.
//
//   cmake --preset fuzz && cmake --build --preset fuzz && ctest --preset fuzz   (bounded run)
//   make fuzz FUZZ_SECONDS=3600                                                 (long run)
//
// Input layout: byte 0 the configuration, 1 batch, 2 seq_q, 3 seq_kv, 4 mask flags, 5 misuse
// flags, 6 threads; the rest are element values, one byte each, cycled when short.
#include "../support/agreement.hpp"
#include "../support/fuzz_bytes.hpp"
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
  for (auto& x : pad) x = in.next() < 64;
  for (auto& x : pairs) x = in.next() < 64;
  for (auto& x : add) x = in.value<T>();
  // Misuse: an operand that was moved from (its run-time extents become 0).
  std::optional<tensor<T, v_shape>> taken;
  if (misuse & 4) taken.emplace(std::move(v));

  auto check = [&](auto make) {
    std::optional<std::string> rejected[3];
    auto attempt = [&](int which, auto&& body) {
      try {
        body();
      } catch (const shape_error& e) {
        rejected[which] = e.what();
      } catch (const std::exception& e) {
        fail(std::string("an exception other than shape_error: ") + e.what());
      }
    };
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
  switch (masks & 7) {
    case 0:
      return check([&] { return attend(softmax(s()), v); });
    case 1:
      return check([&] { return attend(softmax(mask(s(), causal)), v); });
    case 2:
      return check([&] { return attend(softmax(mask(s(), ignore_keys(pad))), v); });
    case 3:
      return check([&] { return attend(softmax(mask(s(), ignore_where(pairs), causal)), v); });
    case 4:
      return check([&] { return attend(softmax(mask(s(), add_to_scores(add))), v); });
    case 5:
      return check([&] {
        return attend(
            softmax(mask(s(), add_to_scores(add), ignore_keys(pad), ignore_where(pairs), causal)),
            v);
      });
    case 6:
      return check(
          [&] { return merge_heads(attend(softmax(mask(s(), causal, ignore_keys(pad))), v)); });
    default:  // not a chain the fused loop nest takes: unfused steps under the fused policy
      return check([&] { return attend(softmax(mask(s(), causal, causal)), v); });
  }
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
