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

/// A stacked projection weight S = (model, model), value type T, with its gemm panels.
template <class T, Shape S>
class packed_weight {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "value_type_is_float_or_double: argus::packed_weight<T, S> holds float or double");
  static_assert(axes_are_a_stacked_weight<S>,
                "axes_are_a_stacked_weight: argus::packed_weight holds a (model, model) weight, "
                "the W of x·W");

 public:
  using value_type = T;
  using shape_type = S;

  /// A copy of w's elements (a tensor or a view of shape S, any strides), and the panels.
  explicit packed_weight(const tensor_view<const T, S>& w) : rows_(w.shape()) {
    detail::check_has_storage("argus::packed_weight", w.data(), w.size());
    detail::copy_elements(w, rows_);
    pack();
  }
  explicit packed_weight(const tensor_view<T, S>& w) : packed_weight(tensor_view<const T, S>(w)) {}
  explicit packed_weight(const tensor<T, S>& w) : packed_weight(w.view()) {}

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

  tensor<T, S> rows_;
  aligned_buffer<T> panels_;
  std::size_t width_ = 0;
};

template <class T, Shape S>
packed_weight(const tensor<T, S>&) -> packed_weight<T, S>;
template <class T, Shape S>
packed_weight(const tensor_view<T, S>&) -> packed_weight<std::remove_const_t<T>, S>;

namespace detail {
template <class T, Shape S>
struct owns_elements<packed_weight<T, S>> : std::true_type {};
}  // namespace detail

/// A packed_weight as an operand: a leaf over its elements that carries its panels.
template <class T, Shape S>
constexpr leaf<const T, S> as_expression(const packed_weight<T, S>& w) noexcept {
  return {w.view(), w.panels()};
}
template <class T, Shape S>
constexpr leaf<const T, S> as_expression(packed_weight<T, S>&& w) = delete;  // would dangle

}  // namespace argus
