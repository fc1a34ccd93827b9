// argus/expr/node.hpp -- expression layer: the Expression concept and how operands are held.
//
// A node holds its operands and states its result shape as a type (shape_type) and as a
// value with the run-time extents (shape()). It has no loops: evaluators (eval/) give it
// meaning. Nodes opt in with `static constexpr bool is_expression = true;`.
//
// Operands are held by value. A tensor_view is a value; an owning argus::tensor becomes a
// leaf holding a view of it, that is, a reference: the tensor must outlive the expression.
// A temporary tensor is rejected at compile time for that reason. The leaf also watches the
// tensor's storage (detail::storage_state): evaluating it after the storage is gone (the
// tensor destroyed, moved into, or assigned a tensor of another shape) throws shape_error
// instead of reading freed memory. A view of memory owned elsewhere is not watched.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/shape/shape.hpp>
#include <argus/tensor/tensor_concepts.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace argus {

/// An expression node: opted in, with a value type, a shape type, and a shape() value.
template <class E>
concept Expression = requires(const E& e) {
  requires E::is_expression;
  typename E::value_type;
  typename E::shape_type;
  { e.shape() } -> std::same_as<typename E::shape_type>;
};

namespace detail {
/// The panels a packed_weight (eval/packed_weight.hpp) holds beside its row-major elements:
/// the matrix as kernel::pack_gemm_b packed it, `width` columns per panel; null when none.
template <class T>
struct packed_panels {
  const T* data = nullptr;
  std::size_t width = 0;
};
}  // namespace detail

/// A leaf: a tensor read through a view. Element type T is the value type, possibly const.
/// A leaf of a packed_weight also carries its panels, which projections may read instead of
/// packing the view's elements on every call; every other reader sees the view. A leaf of an
/// owning tensor (or packed_weight) watches its storage; evaluators read a leaf only after
/// detail::check_leaf_storage.
template <class T, Shape S>
struct leaf {
  static constexpr bool is_expression = true;
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  tensor_view<T, S> view;
  detail::packed_panels<value_type> packed{};
  detail::storage_watch watch{};
  S shape() const noexcept { return view.shape(); }
};

namespace detail {
/// Throws shape_error when w watches storage that is gone. The message names `what` (say
/// "the input x_q"), or else "an operand of <size> elements".
inline void check_storage_kept(const char* op, const storage_watch& w, std::size_t size,
                               const char* what = nullptr) {
  if (w && w->released)
    throw shape_error(
        std::string(op) + ": " +
        (what != nullptr ? std::string(what)
                         : "an operand of " + std::to_string(size) + " elements") +
        " reads a tensor whose storage is gone: after the expression was built, the tensor was "
        "destroyed, moved into (x = std::move(y), x = evaluate(...)) or assigned a tensor of "
        "another shape; build the expression again (a copy-assignment of the same shape keeps "
        "the storage)");
}
/// Throws shape_error unless leaf e can be read: when the storage of the tensor it was built on
/// is gone, or when it has elements but no storage (check_has_storage). `op` names the entry
/// point.
template <class T, Shape S>
void check_leaf_storage(const char* op, const leaf<T, S>& e) {
  check_storage_kept(op, e.watch, e.view.size());
  check_has_storage(op, e.view.data(), e.view.size());
}
}  // namespace detail

/// The expression for an operand: an expression as is (moved from when it is a temporary, as
/// the nodes that entry points return are: their leaves' storage watches are moved, not copied),
/// a tensor or view as a leaf.
template <Expression E>
constexpr E as_expression(const E& e) noexcept {
  return e;
}
template <class E>
  requires(Expression<E> && !std::is_reference_v<E> && !std::is_const_v<E>)
constexpr E as_expression(E&& e) noexcept {
  return std::forward<E>(e);  // E is no reference: a move
}
template <class T, Shape S>
leaf<const T, S> as_expression(const tensor_view<T, S>& v) noexcept {
  return {v};
}
template <class T, Shape S>
leaf<const T, S> as_expression(const tensor<T, S>& t) noexcept {
  return {t.view(), {}, detail::tensor_access::watch(t)};
}
template <class T, Shape S>
leaf<const T, S> as_expression(tensor<T, S>&& t) = delete;  // would dangle: see above

namespace detail {
/// True for the operand types that own their elements and that expressions hold by reference:
/// argus::tensor, and argus::packed_weight (eval/packed_weight.hpp specialises it).
template <class X>
struct owns_elements : std::bool_constant<Tensor<X>> {};
}  // namespace detail

/// Expressions hold owning tensors by reference, so a temporary tensor cannot be an operand.
template <class X>
concept operand_is_not_a_temporary_tensor =
    !(detail::owns_elements<std::remove_cvref_t<X>>::value && std::is_rvalue_reference_v<X&&>);

/// evaluate(e, p), explain(e, p), evaluate_reference(e) and attention_weights(e) take an
/// expression (built by project, scores, forward, ...), not a tensor, which already holds its
/// value.
template <class E>
concept argument_is_an_expression = Expression<E>;

/// An operand is an argus tensor, a tensor_view or an expression (not a mask, a number or a
/// foreign array).
template <class X>
concept operand_is_a_tensor_view_or_expression = requires(const std::remove_cvref_t<X>& x) {
  as_expression(x);
};

/// Something an expression can take as an operand: an expression, a view, or a tensor lvalue.
template <class X>
concept Operand = operand_is_a_tensor_view_or_expression<X> && operand_is_not_a_temporary_tensor<X>;

namespace detail {
/// What an entry point returns once its static_assert has reported a broken rule. Every entry
/// point takes it silently and returns it again, so one misuse gives one error, not a cascade
/// through the calls that use the result.
struct rejected {};
/// Whether X is what a reported misuse leaves behind: rejected itself, or a type whose own
/// static_assert has reported it (a packed_weight of no weight, eval/packed_weight.hpp, which
/// specialises this where it is defined). Entry points take one silently.
template <class X>
inline constexpr bool is_rejected = std::is_same_v<X, rejected>;
template <class... X>
inline constexpr bool any_rejected = (is_rejected<std::remove_cvref_t<X>> || ...);
}  // namespace detail

namespace detail {
// The types of operand X, as members of a class: GCC 12 prints `operand_types<X>::shape_type`
// where it cannot print an alias defined by decltype (it wrote "typename'decltype_type' not
// supported by pp_cxx_unqualified_id" in every candidate's requires-clause).
template <class X>
struct operand_types {
  using expression = decltype(as_expression(std::declval<X>()));
  using shape_type = typename expression::shape_type;
  using value_type = typename expression::value_type;
};
}  // namespace detail

/// The expression type for operand X.
template <Operand X>
using expression_t = typename detail::operand_types<X>::expression;

/// The result shape type and value type of an operand.
template <Operand X>
using shape_of = typename detail::operand_types<X>::shape_type;
template <Operand X>
using value_type_of = typename detail::operand_types<X>::value_type;

/// Static extent I of operand X's shape.
template <Operand X, std::size_t I>
inline constexpr std::size_t extent_of = static_extent_v<shape_of<X>, I>;

/// Axis I of operand X's shape. Entry points name extents as `axis_of<X, I>::static_extent`,
/// which GCC prints as the number (a variable template it would print by name).
template <Operand X, std::size_t I>
using axis_of = axis_t<shape_of<X>, I>;

namespace detail {
/// dyn when some width axis (model, head, head_dim) of shape S is a run-time extent, else 0.
template <class S>
inline constexpr std::size_t run_time_width = 0;
template <class... A>
inline constexpr std::size_t run_time_width<shape<A...>> =
    ((A::static_extent == dyn &&
      (same_axis_kind<A, model<1>>::value || same_axis_kind<A, head<1>>::value ||
       same_axis_kind<A, head_dim<1>>::value)) ||
     ...)
        ? dyn
        : 0;

/// Reports (static_assert) the first operand rule X breaks; true when it breaks none. A
/// rejected operand (an earlier error, already reported) is false without a second report.
/// Every entry point checks its operands here, so a rule of operands holds for all of them.
template <bool Report, class X>
constexpr bool operand_accepted() {
  if constexpr (any_rejected<X>) {
    return false;
  } else if constexpr (!operand_is_a_tensor_view_or_expression<X>) {
    if constexpr (Report)
      static_assert(
          operand_is_a_tensor_view_or_expression<X>,
          "operand_is_a_tensor_view_or_expression: an operand of argus is an argus::tensor, "
          "a tensor_view or an expression");
    return false;
  } else if constexpr (!operand_is_not_a_temporary_tensor<X>) {
    if constexpr (Report)
      static_assert(operand_is_not_a_temporary_tensor<X>,
                    "operand_is_not_a_temporary_tensor: the expression would keep a reference to a "
                    "temporary tensor (or packed_weight); name it first");
    return false;
  } else {
    return true;
  }
}
/// Whether the widths of operand X (an accepted one) are all static.
template <class X>
constexpr bool operand_widths_static() {
  return model_width_is_static<run_time_width<shape_of<X>>>;
}
/// The position of the first false in `ok`, or ok.size() when there is none.
template <std::size_t N>
constexpr std::size_t first_false(const std::array<bool, N>& ok) {
  for (std::size_t i = 0; i < N; ++i)
    if (!ok[i]) return i;
  return N;
}
/// operand_accepted for each operand: the first that breaks a rule is reported, the others
/// are not. The one reported is instantiated from here directly, wherever it stands among the
/// operands, so its error is as few lines deep for the last operand as for the first.
/// Then, over operands that all pass, the first whose widths are not static is reported
/// (model_width_is_static, from here: one level less deep): a head<dyn> or head_dim<dyn>
/// operand would reach the kernels unchecked (4 query heads against 3 key heads read past K),
/// and a model<dyn> one would break a later rule with dyn's value.
template <bool Report, class X, class... Rest>
constexpr bool operands_accepted() {
  constexpr std::size_t count = 1 + sizeof...(Rest);
  constexpr std::size_t first = first_false(
      std::array<bool, count>{operand_accepted<false, X>(), operand_accepted<false, Rest>()...});
  if constexpr (first != count) {
    if constexpr (Report)
      (void)operand_accepted<true, std::tuple_element_t<first, std::tuple<X, Rest...>>>();
    return false;
  } else {
    constexpr std::size_t wide = first_false(
        std::array<bool, count>{operand_widths_static<X>(), operand_widths_static<Rest>()...});
    using W = std::tuple_element_t<wide == count ? 0 : wide, std::tuple<X, Rest...>>;
    if constexpr (Report && wide != count)
      static_assert(model_width_is_static<run_time_width<shape_of<W>>>,
                    "model_width_is_static: an operand's widths (model<N>, head<N>, head_dim<N>) "
                    "are compile-time extents; only batch<> and seq<> may be argus::dyn");
    return wide == count;
  }
}
}  // namespace detail

}  // namespace argus
