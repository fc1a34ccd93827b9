// argus/eval/materialized.hpp -- evaluation layer: the value of an evaluated sub-expression.
//
// Every evaluator step returns a materialized<T, S>: a view of the result, and the storage
// it points into when the step allocated it (empty when the view reads the user's tensor).
// Steps that only re-describe memory (split-heads in the fused evaluator) move the storage
// along and change the view's layout.
//
// evaluate(e, policy, out) offers out's elements to the step that evaluates e itself (the
// root): a step that allocates its result with allocate_result(e, ev, operands...) writes
// straight into out, unless out shares a byte with an operand it reads, and evaluate then
// copies nothing (a full pass over the output saved; docs/performance.md).
#pragma once

#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace argus::detail {

template <class T, Shape S>
struct materialized {
  using value_type = T;
  using shape_type = S;
  aligned_buffer<T> storage;  // empty when view reads memory owned elsewhere
  tensor_view<const T, S> view;
  T* destination = nullptr;  // the caller's elements the view reads, when the root writes there
  storage_watch watch{};     // a borrowed tensor's storage (a leaf's watch), for later readers

  bool owns_storage() const noexcept { return storage.size() != 0 || view.size() == 0; }
  /// Writable access; only for results this evaluation allocated or writes into the caller's
  /// output (allocate_result).
  T* mutable_data() noexcept { return storage.size() != 0 ? storage.data() : destination; }
};

/// A fresh row-major result of shape s; its elements are uninitialised: every evaluator
/// step writes each element of the result it allocates.
template <class T, Shape S>
materialized<T, S> allocate(const S& s) {
  materialized<T, S> m;
  m.storage = aligned_buffer<T>(s.size(), uninitialized);
  m.view = tensor_view<const T, S>(m.storage.data(), s);
  return m;
}

/// Where evaluate(e, policy, out) lets the step that evaluates e write its result: out's
/// elements (row-major, e's extents, checked by evaluate), for the node at `node` whose type
/// is the one type_tag<E> stands for. Empty in every other evaluation.
struct root_destination {
  const void* node = nullptr;
  const void* type = nullptr;
  void* data = nullptr;
};
template <class E>
inline constexpr char type_tag = 0;

/// The bytes view v may read, [first, last); empty for an empty view.
template <class T, Shape S>
std::pair<std::uintptr_t, std::uintptr_t> byte_span(const tensor_view<const T, S>& v) noexcept {
  if (v.size() == 0 || v.data() == nullptr) return {0, 0};
  std::size_t last = 0;
  for (std::size_t i = 0; i < S::rank(); ++i) last += (v.extent(i) - 1) * v.stride(i);
  const auto first = reinterpret_cast<std::uintptr_t>(v.data());
  return {first, first + (last + 1) * sizeof(T)};
}

/// Whether the `bytes` bytes at d share one with what v may read.
template <class T, Shape S>
bool shares_bytes(const void* d, std::size_t bytes, const tensor_view<const T, S>& v) noexcept {
  const auto [first, last] = byte_span(v);
  const auto begin = reinterpret_cast<std::uintptr_t>(d);
  return first < last && bytes != 0 && first < begin + bytes && begin < last;
}

/// Where node e's step, evaluated with ev, may write its result of `bytes` bytes while it reads
/// `reads` (views): the caller's output when e is the root of evaluate(e, policy, out) and the
/// output shares no byte with any of `reads`; null otherwise.
template <class E, class Ev, class... Reads>
void* root_output([[maybe_unused]] const E& e, [[maybe_unused]] const Ev& ev,
                  [[maybe_unused]] std::size_t bytes,
                  [[maybe_unused]] const Reads&... reads) noexcept {
  if constexpr (requires { ev.root; }) {
    const root_destination& root = ev.root;
    if (root.node == static_cast<const void*>(&e) && root.type == &type_tag<E> &&
        root.data != nullptr && !(shares_bytes(root.data, bytes, reads) || ...))
      return root.data;
  }
  return nullptr;
}

/// The result of node e, evaluated with ev, whose step reads `reads` (views) while it writes
/// the result: the caller's output when e is the root of evaluate(e, policy, out) and the
/// output shares no byte with any of `reads`, else a fresh row-major result (allocate). A
/// step that calls it after its run-time checks writes nothing of out before they pass.
template <class T, class E, class Ev, class... Reads>
materialized<T, typename E::shape_type> allocate_result(const E& e, const Ev& ev,
                                                        const Reads&... reads) {
  using S = typename E::shape_type;
  const S s = e.shape();
  if (void* data = root_output(e, ev, s.size() * sizeof(T), reads...)) {
    materialized<T, S> m;
    m.destination = static_cast<T*>(data);
    m.view = tensor_view<const T, S>(m.destination, s);
    return m;
  }
  return allocate<T>(s);
}

/// Operand x of node e, whose step then works in place on x's result (a mask, the softmax)
/// while it reads `reads` (views) besides: where e is the root of evaluate(e, policy, out) and
/// out shares no byte with any of `reads`, x is evaluated as the root in e's place (its result
/// written into out where x's step can: allocate_result), so that e's step works on out
/// itself and nothing is copied; otherwise x is evaluated as any operand.
template <class E, class X, class Ev, class... Reads>
auto evaluate_in_place_operand(const E& e, const X& x, const Ev& ev, const Reads&... reads) {
  if constexpr (requires { ev.root; }) {
    const std::size_t bytes = e.shape().size() * sizeof(typename E::value_type);
    if (void* data = root_output(e, ev, bytes, reads...)) {
      Ev inner = ev;
      inner.root = {&x, &type_tag<X>, data};
      return inner(x);
    }
  }
  return ev(x);
}

/// A result that reads memory owned elsewhere (a leaf).
template <class T, Shape S>
materialized<T, S> borrow(const tensor_view<const T, S>& v) {
  materialized<T, S> m;
  m.view = v;
  return m;
}

/// The same storage seen through another layout (post: the storage is unchanged).
template <class T, Shape S, Shape R>
materialized<T, R> relayout(materialized<T, S>&& m, const layout<R>& l) {
  materialized<T, R> r;
  const T* base = m.view.data();
  r.storage = std::move(m.storage);
  r.view = tensor_view<const T, R>(base, l);
  r.watch = std::move(m.watch);
  return r;
}

}  // namespace argus::detail
