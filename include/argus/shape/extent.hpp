// argus/shape/extent.hpp -- shape layer: extents and the named axes of attention.
//
// An extent is static (a number in the type) or run-time (`argus::dyn`, the mdspan
// dynamic_extent idea): model widths are static, sequence lengths and batch may be either.
// An axis is an extent with a meaning. Axes of different kinds never match, so passing a
// (seq, model) tensor where (model, seq) or (seq, head_dim) is expected fails to compile
// even when the numbers happen to be equal.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>

namespace argus {

/// The run-time extent: the value is known only when a tensor is made.
inline constexpr std::size_t dyn = std::dynamic_extent;

/// Batch items.
template <std::size_t N = dyn>
struct batch {
  static constexpr std::size_t static_extent = N;
};
/// Sequence positions (tokens): queries, keys or values.
template <std::size_t N = dyn>
struct seq {
  static constexpr std::size_t static_extent = N;
};
/// Features of an activation or of a stacked weight: d_model, kdim, vdim, h·d_k, h·d_v.
template <std::size_t N>
struct model {
  static constexpr std::size_t static_extent = N;
};
/// Attention heads (query heads or key/value heads).
template <std::size_t N>
struct head {
  static constexpr std::size_t static_extent = N;
};
/// Features of one head: d_k or d_v.
template <std::size_t N>
struct head_dim {
  static constexpr std::size_t static_extent = N;
};

namespace detail {
template <class A>
struct axis_traits : std::false_type {};
// clang-format off
template <template <std::size_t> class Kind, std::size_t N>
  requires std::is_same_v<Kind<N>, batch<N>> || std::is_same_v<Kind<N>, seq<N>> ||
           std::is_same_v<Kind<N>, model<N>> || std::is_same_v<Kind<N>, head<N>> ||
           std::is_same_v<Kind<N>, head_dim<N>>
struct axis_traits<Kind<N>> : std::true_type {
  // clang-format on
  template <std::size_t M>
  using rebind = Kind<M>;
};
template <class A, class B>
struct same_axis_kind : std::false_type {};
template <template <std::size_t> class Kind, std::size_t M, std::size_t N>
struct same_axis_kind<Kind<M>, Kind<N>> : std::true_type {};

/// The kind of axis A in words, as the user writes it: "batch", "seq", "model", "head" or
/// "head_dim" (for run-time messages that name an axis).
template <class A>
constexpr const char* axis_kind_name() noexcept {
  if constexpr (same_axis_kind<A, batch<1>>::value) return "batch";
  if constexpr (same_axis_kind<A, seq<1>>::value) return "seq";
  if constexpr (same_axis_kind<A, model<1>>::value) return "model";
  if constexpr (same_axis_kind<A, head<1>>::value) return "head";
  if constexpr (same_axis_kind<A, head_dim<1>>::value) return "head_dim";
  return "axis";
}
}  // namespace detail

/// An axis: one of batch<N>, seq<N>, model<N>, head<N>, head_dim<N>.
template <class A>
concept Axis = detail::axis_traits<A>::value;

/// True when A and B are the same kind of axis, whatever their extents.
template <class A, class B>
concept same_axis_kind = Axis<A> && Axis<B> && detail::same_axis_kind<A, B>::value;

/// The axis of the same kind as A with extent M.
template <Axis A, std::size_t M>
using rebind_axis = typename detail::axis_traits<A>::template rebind<M>;

/// Two extents may describe the same length: equal, or one of them known only at run time.
template <std::size_t A, std::size_t B>
inline constexpr bool extents_may_agree = A == dyn || B == dyn || A == B;

/// The extent that two agreeing extents describe: the static one if either is static.
template <std::size_t A, std::size_t B>
inline constexpr std::size_t common_extent = A == dyn ? B : A;

}  // namespace argus
