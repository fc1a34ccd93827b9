// 01_shapes -- the vocabulary: named axes, static and run-time extents, shapes, owning
// tensors, views, and split-heads as a view of the same memory (no copy).
//
// It prints each shape and layout it builds, checks the split-heads post-condition
//     split_heads_view<H>(x)(b, h, s, d) == x(b, s, h * DK + d)     (same element, same address)
// and exits non-zero if a check fails. docs/tutorial/getting_started.md and
// docs/explanation/layouts.md quote it.
#include <argus/argus.hpp>

#include <cstddef>
#include <cstdio>
#include <type_traits>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

template <argus::Shape S>
void print_shape(const char* name, const S& s) {
  std::printf("%-34s rank %zu, %zu run-time extent(s), extents (", name, S::rank(),
              S::rank_dynamic());
  for (std::size_t i = 0; i < S::rank(); ++i) std::printf("%s%zu", i ? "," : "", s.extent(i));
  std::printf("), %zu elements\n", s.size());
}

template <class View>
void print_strides(const char* name, const View& v) {
  std::printf("%-34s strides (", name);
  for (std::size_t i = 0; i < View::rank(); ++i) std::printf("%s%zu", i ? "," : "", v.stride(i));
  std::printf(")\n");
}

// Whether split_heads<H> accepts an operand of type X. A misuse is a static_assert (the
// compile error names the rule); split_heads_accepts asks the same rules without failing.
template <std::size_t H, class X>
concept can_split_heads = argus::split_heads_accepts<H, X&>;

}  // namespace

int main() {
  using namespace argus;

  // --- Axes and extents ----------------------------------------------------------------
  // An axis is an extent with a meaning: batch, seq, model (features), head, head_dim.
  // A number is a static extent, part of the type; `dyn` (the default for batch and seq)
  // is a run-time extent, given when the object is made, as std::dynamic_extent in mdspan.
  using activation = shape<batch<>, seq<>, model<16>>;  // (BATCH,SEQ,D_MODEL), D_MODEL = 16
  static_assert(activation::rank() == 3 && activation::rank_dynamic() == 2);
  static_assert(activation::static_extent(2) == 16 && activation::static_extent(0) == dyn);
  static_assert(activation::static_size() == dyn);  // unknown until the extents are
  static_assert(shape<seq<4>, model<16>>::static_size() == 64);

  // Axes of different kinds never match, even with equal numbers: (seq, model) is not
  // (model, seq), and a head_dim<16> is not a model<16>.
  static_assert(!same_axis_kind<seq<16>, model<16>>);
  static_assert(same_axis_kind<seq<>, seq<7>>);
  static_assert(shape_has_axes<activation, batch, seq, model>);

  // --- Shapes: the run-time extents, in axis order ------------------------------------
  const activation s(2, 5);  // batch 2, seq 5, model 16
  print_shape("shape<batch<>, seq<>, model<16>>", s);
  check(s.extent(0) == 2 && s.extent(1) == 5 && s.extent(2) == 16 && s.size() == 160,
        "shape(2, 5) has extents (2,5,16) and 160 elements");

  // from_extents takes every extent and checks the static ones.
  bool threw = false;
  try {
    (void)activation::from_extents({2, 5, 17});  // model<16> given as 17
  } catch (const shape_error& e) {
    threw = true;
    std::printf("  from_extents({2, 5, 17}) threw argus::shape_error: %s\n", e.what());
  }
  check(threw, "a static extent given a different value throws shape_error");

  // --- Tensors: owning, aligned, row-major; elements start at zero ---------------------
  tensor<float, activation> x(2, 5);  // (BATCH,SEQ,D_MODEL) = (2,5,16)
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 5; ++t)
      for (std::size_t j = 0; j < 16; ++j) x(b, t, j) = float(100 * b + 10 * t) + 0.01f * float(j);
  print_shape("tensor x", x.shape());

  // --- Views: a pointer and a layout (shape + strides), held by value -------------------
  const tensor_view<const float, activation> xv = x.view();  // (2,5,16), no copy
  print_strides("x.view()", xv);
  check(xv.stride(0) == 80 && xv.stride(1) == 16 && xv.stride(2) == 1,
        "a tensor's view is row-major: strides (SEQ*D_MODEL, D_MODEL, 1)");
  check(&xv(1, 2, 3) == &x(1, 2, 3), "the view reads the tensor's memory");

  // --- Split heads: the same memory seen as (batch, head, seq, head_dim) ----------------
  // Splitting the model mode of (B,S,D):(S*D,D,1) by DK = D/H gives
  //     (B,H,S,DK):(S*D, DK, D, 1)
  // (docs/explanation/layouts.md derives it). No element moves.
  constexpr std::size_t H = 4, DK = 16 / H;
  const auto heads = split_heads_view<H>(xv);  // (BATCH,HEAD,SEQ,D_K) = (2,4,5,4)
  static_assert(
      std::is_same_v<decltype(heads)::shape_type, shape<batch<>, head<4>, seq<>, head_dim<4>>>);
  print_shape("split_heads_view<4>(x)", heads.shape());
  print_strides("split_heads_view<4>(x)", heads);
  check(heads.stride(0) == 80 && heads.stride(1) == DK && heads.stride(2) == 16 &&
            heads.stride(3) == 1,
        "split strides are (SEQ*D_MODEL, D_K, D_MODEL, 1)");

  // post: heads(b, h, s, d) == x(b, s, h * DK + d), at the same address.
  bool post = true;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < 5; ++t)
        for (std::size_t d = 0; d < DK; ++d)
          post = post && &heads(b, h, t, d) == &x(b, t, h * DK + d);
  check(post, "post-condition on every coordinate: &heads(b,h,s,d) == &x(b,s,h*DK+d)");
  std::printf("  heads(1, 2, 3, 1) = %.2f = x(1, 3, 9) = %.2f\n", double(heads(1, 2, 3, 1)),
              double(x(1, 3, 9)));

  // Merge-heads reads the same layout back: a view exactly when the heads sit side by side.
  const auto merged = merge_layout(heads.layout());
  check(merged.has_value() && *merged == xv.layout(),
        "merge_layout(split_layout(l)) == l: merge-heads of split heads is a view");
  // Heads stored one after another, (B,H,S,DK) row-major, cannot be merged without a copy.
  using per_head = shape<batch<>, head<4>, seq<>, head_dim<4>>;
  check(!merge_layout(layout<per_head>::row_major(per_head(2, 5))).has_value(),
        "row-major (B,H,S,DK) heads do not merge into a view");

  // --- Relations are checked at compile time --------------------------------------------
  // 4 heads divide 16 features; 3 do not, and split_heads<3> does not accept x at all:
  // a call would fail to compile with "heads_divide_width" in its error line.
  static_assert(can_split_heads<4, tensor<float, activation>>);
  static_assert(!can_split_heads<3, tensor<float, activation>>);
  static_assert(!heads_divide_width<16, 3>);
  std::printf(
      "  split_heads<3> of a model<16> tensor is rejected at compile time "
      "(heads_divide_width<16, 3> is false)\n");

  std::printf("%s\n", failures ? "01_shapes: FAILED" : "01_shapes: all checks passed");
  return failures ? 1 : 0;
}
