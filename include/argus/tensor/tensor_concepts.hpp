// argus/tensor/tensor_concepts.hpp -- tensor layer: the TensorLike and TensorView concepts.
#pragma once

#include <argus/tensor/tensor.hpp>
#include <argus/tensor/tensor_view.hpp>

#include <type_traits>

namespace argus {

namespace detail {
template <class X>
struct is_tensor : std::false_type {};
template <class T, class S>
struct is_tensor<tensor<T, S>> : std::true_type {};
// is_tensor_view: tensor/tensor_view.hpp (split_heads_view uses it).
}  // namespace detail

/// An owning argus::tensor<T, Shape>.
template <class X>
concept Tensor = detail::is_tensor<std::remove_cvref_t<X>>::value;

/// An argus::tensor_view<T, Shape> (pointer + layout).
template <class X>
concept TensorView = detail::is_tensor_view<std::remove_cvref_t<X>>::value;

/// Either: something an expression can read from.
template <class X>
concept TensorLike = Tensor<X> || TensorView<X>;

}  // namespace argus
