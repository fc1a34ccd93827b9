// argus/eval/materialized.hpp -- evaluation layer: the value of an evaluated sub-expression.
//
// Every evaluator step returns a materialized<T, S>: a view of the result, and the storage
// it points into when the step allocated it (empty when the view reads the user's tensor).
// Steps that only re-describe memory (split-heads in the fused evaluator) move the storage
// along and change the view's layout.
#pragma once

#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <cstddef>
#include <utility>

namespace argus::detail {

template <class T, Shape S>
struct materialized {
  using value_type = T;
  using shape_type = S;
  aligned_buffer<T> storage;  // empty when view reads memory owned elsewhere
  tensor_view<const T, S> view;

  bool owns_storage() const noexcept { return storage.size() != 0 || view.size() == 0; }
  /// Writable access; only for results this evaluation allocated.
  T* mutable_data() noexcept { return storage.data(); }
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
  return r;
}

}  // namespace argus::detail
