// argus/eval/packed_weight.hpp -- evaluation layer: a projection weight packed once for the
// matrix products, for inference that reads the same weights call after call.
//
//     argus::packed_weight w(mha.w_o);              // a copy of W, and W in gemm's panels
//     auto y = argus::evaluate(argus::project(x, w), argus::fused);
//
// Every product x·W packs W into panels of gemm_panel_width() columns before it multiplies
// (kernel/gemm.hpp); for short sequences that copy is a tenth of a projection's time. A
// packed_weight holds both W's elements, row-major, and those panels, packed at construction
// for the instruction set the kernels run; a projection reads the panels in place (kernel::
// gemm_nn_split_prepacked), to the bit the same result. It is immutable: a weight changed
// after packing (an optimizer step) is a new packed_weight, so no panels can go stale. Under
// another instruction set's panel width (a program that calls another set's kernels) the
// projection reads the elements as it reads a tensor's.
//
// As an operand it is held as a tensor is, by reference: it must outlive the expression, and a
// temporary one is rejected. prepack(module) (eval/prepacked.hpp) packs a module's four.
#pragma once

#include <argus/diagnostics/check.hpp>
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/attention.hpp>
#include <argus/expr/node.hpp>
#include <argus/kernel/gemm.hpp>
#include <argus/kernel/instances.hpp>
#include <argus/tensor/aligned_buffer.hpp>
#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_concepts.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace argus {

template <class T, Shape S>
class packed_weight;

/// packed_weight(w) copies and packs a weight that an argus::tensor or argus::tensor_view holds
/// (an expression is evaluated into a tensor first).
template <class W>
concept packed_weight_takes_a_tensor_or_view = bool(TensorLike<W>);
/// packed_weight<T, S>(w): w has the shape type S (a tensor or view of another shape is another
/// weight).
template <class PackedShape, class WeightShape>
concept weight_shape_equals_packed_shape = std::is_same_v<PackedShape, WeightShape>;

namespace detail {
/// packed_weight<T, S>'s own rules, in order: the first broken one is reported, once. True
/// unless one is reported; T = rejected (packed_weight(w) deduced from no tensor) is reported
/// by the constructor.
template <class T, class S>
constexpr bool packed_weight_type_checked() {
  if constexpr (std::is_same_v<T, rejected>) {
    return true;
  } else if constexpr (!value_type_is_float_or_double<T>) {
    static_assert(
        value_type_is_float_or_double<T>,
        "value_type_is_float_or_double: argus::packed_weight<T, S> holds float or double");
    return true;
  } else if constexpr (!axes_are_a_stacked_weight<S>) {
    static_assert(axes_are_a_stacked_weight<S>,
                  "axes_are_a_stacked_weight: argus::packed_weight holds a (model, model) weight, "
                  "the W of x·W");
    return true;
  } else {
    // Before, a (model<dyn>, model<dyn>) weight was packed and each expression using it
    // reported the rule: the packed_weight is now the place.
    static_assert(model_width_is_static<run_time_width<S>>,
                  "model_width_is_static: argus::packed_weight<T, S> packs a weight of "
                  "compile-time widths, as every operand's are; only batch<> and seq<> may be "
                  "argus::dyn");
    return true;
  }
}

/// Whether packed_weight<T, S> holds a weight (its rules hold). A concept of its own, not a
/// member: the constructors' deduction guides check it without instantiating the class.
template <class T, class S>
concept packable =
    value_type_is_float_or_double<T> && axes_are_a_stacked_weight<S> && run_time_width<S>
== 0;

template <class X>
using const_ref = const X&;
/// Whether a packed_weight<T, S> constructor takes w as it is: a tensor or view of T and S, or
/// what converts to one.
template <class W, class T, class S>
concept converts_to_a_packed_weight_source =
    bool(std::is_convertible_v<W, tensor_view<const T, S>> ||
         std::is_convertible_v<W, tensor_view<T, S>> ||
         std::is_convertible_v<W, const_ref<tensor<T, S>>>);

/// What packed_weight(w) deduces from: a tensor or view (or a class derived from one).
template <class T, Shape S>
void packed_weight_source_of(const tensor<T, S>&);
template <class T, Shape S>
void packed_weight_source_of(const tensor_view<T, S>&);
template <class T, Shape S>
void packed_weight_source_of(const packed_weight<T, S>&);
template <class W>
concept deduces_a_packed_weight = requires(const W& w) {
  detail::packed_weight_source_of(w);
};
}  // namespace detail

/// A stacked projection weight S = (model, model), value type T, with its gemm panels.
template <class T, Shape S>
class packed_weight {
  static_assert(detail::packed_weight_type_checked<T, S>());
  static constexpr bool holds_a_weight = detail::packable<T, S>;
  using rows_type = std::conditional_t<holds_a_weight, tensor<T, S>, detail::rejected>;
  using panels_type = std::conditional_t<holds_a_weight, aligned_buffer<T>, detail::rejected>;

 public:
  using value_type = T;
  using shape_type = S;

  /// A copy of w's elements (a tensor or a view of shape S, any strides), and the panels.
  explicit packed_weight(const tensor_view<const T, S>& w) requires detail::packable<T, S>
      : rows_(w.shape()) {
    detail::check_has_storage("argus::packed_weight", w.data(), w.size());
    detail::copy_elements(w, rows_);
    pack();
  }
  explicit packed_weight(const tensor_view<T, S>& w) requires detail::packable<T, S>
      : packed_weight(tensor_view<const T, S>(w)) {}
  explicit packed_weight(const tensor<T, S>& w) requires detail::packable<T, S>
      : packed_weight(w.view()) {}
  /// Anything else: the first broken rule is reported here (or, for T and S themselves, by the
  /// class), once; the constructor then takes w silently. (It cannot hide the copy and move
  /// constructors: its requires-clause leaves out packed_weight itself.)
  // NOLINTBEGIN(bugprone-forwarding-reference-overload)
  template <class W>
    requires(!std::is_same_v<std::remove_cvref_t<W>, packed_weight> &&
             (!detail::packable<T, S> || !detail::converts_to_a_packed_weight_source<W, T, S>))
  explicit packed_weight(W&&) {
    // NOLINTEND(bugprone-forwarding-reference-overload)
    using source = std::remove_cvref_t<W>;
    if constexpr (!holds_a_weight && !std::is_same_v<T, detail::rejected>) {
      // reported by the class's static_assert
    } else if constexpr (!packed_weight_takes_a_tensor_or_view<W>) {
      static_assert(packed_weight_takes_a_tensor_or_view<W>,
                    "packed_weight_takes_a_tensor_or_view: argus::packed_weight(w) copies and "
                    "packs a weight held in an argus::tensor or argus::tensor_view; evaluate an "
                    "expression into a tensor first");
    } else if constexpr (!value_types_agree<T, typename source::value_type>) {
      static_assert(value_types_agree<T, typename source::value_type>,
                    "value_types_agree: argus::packed_weight<T, S>(w) packs a weight of value type "
                    "T; w holds another (convert it first)");
    } else {
      static_assert(weight_shape_equals_packed_shape<S, typename source::shape_type>,
                    "weight_shape_equals_packed_shape: argus::packed_weight<T, S>(w) packs a "
                    "weight of shape type S; w has another");
    }
  }

  packed_weight(const packed_weight& o) : rows_(o.rows_), panels_(o.panels_), width_(o.width_) {}
  packed_weight& operator=(const packed_weight& o) {
    packed_weight copy(o);
    swap(copy);
    return *this;
  }
  /// A moved-from packed_weight is empty, as a moved-from tensor is.
  packed_weight(packed_weight&& o) noexcept
      : rows_(std::move(o.rows_)),
        panels_(std::move(o.panels_)),
        width_(std::exchange(o.width_, 0)) {}
  packed_weight& operator=(packed_weight&& o) noexcept {
    packed_weight moved(std::move(o));
    swap(moved);
    return *this;
  }
  ~packed_weight() = default;

  static constexpr std::size_t rank() noexcept { return 2; }
  const S& shape() const noexcept { return rows_.shape(); }
  std::size_t extent(std::size_t i) const noexcept { return rows_.extent(i); }
  std::size_t size() const noexcept { return rows_.size(); }
  /// The elements, row-major, read only.
  const T* data() const noexcept { return rows_.data(); }
  tensor_view<const T, S> view() const noexcept { return rows_.view(); }
  const T& operator()(std::size_t i, std::size_t j) const noexcept { return rows_(i, j); }

  /// The panels as a leaf carries them: kernel::pack_gemm_b's layout, `width` columns each.
  detail::packed_panels<T> panels() const noexcept { return {panels_.data(), width_}; }
  /// A leaf over the elements that carries the panels and watches the storage of both (they
  /// are replaced together: a packed_weight moved into or assigned releases its elements).
  friend leaf<const T, S> as_expression(const packed_weight& w) noexcept {
    return {w.view(), w.panels(), detail::tensor_access::watch(w.rows_)};
  }
  /// Bytes held: the elements and the panels.
  std::size_t bytes() const noexcept { return (rows_.size() + panels_.size()) * sizeof(T); }

 private:
  void pack() {
    const std::size_t k = rows_.extent(0), n = rows_.extent(1);
    panels_ = aligned_buffer<T>(kernel::gemm_packed_b_size<T>(k, n), uninitialized);
    kernel::pack_gemm_b<T>(k, n, rows_.data(), n, panels_.data());
    width_ = kernel::gemm_panel_width<T>();
  }
  void swap(packed_weight& o) noexcept {
    std::swap(rows_, o.rows_);
    std::swap(panels_, o.panels_);
    std::swap(width_, o.width_);
  }

  rows_type rows_;
  panels_type panels_;
  std::size_t width_ = 0;
};

template <class T, Shape S>
packed_weight(const tensor<T, S>&) -> packed_weight<T, S>;
template <class T, Shape S>
packed_weight(const tensor_view<T, S>&) -> packed_weight<std::remove_const_t<T>, S>;
/// From anything else, a packed_weight whose constructor reports the argument
/// (packed_weight_takes_a_tensor_or_view).
// clang-format off
template <class W>
  requires(!detail::deduces_a_packed_weight<std::remove_cvref_t<W>>)
packed_weight(W&&) -> packed_weight<detail::rejected, shape<>>;
// clang-format on

namespace detail {
template <class T, Shape S>
struct owns_elements<packed_weight<T, S>> : std::true_type {};
/// A packed_weight of no weight has been reported (by the class or its constructor): an
/// expression that uses it adds no second error.
template <class T, Shape S>
inline constexpr bool is_rejected<packed_weight<T, S>> = !packable<T, S>;
}  // namespace detail

/// A packed_weight as an operand: its as_expression (a friend) gives a leaf over its elements
/// that carries its panels; a temporary is no operand.
template <class T, Shape S>
leaf<const T, S> as_expression(packed_weight<T, S>&& w) = delete;  // would dangle

}  // namespace argus
