// Compile-only checks of the shape layer and of the relations themselves (STYLE.md section 6):
// named axes, shapes, split-heads/merge-heads shapes, and every relation on static
// and on run-time (argus::dyn) extents. A relation on a run-time extent holds here: the library
// checks it at run time instead (docs/reference/diagnostics.md).
#include <argus/diagnostics/relations.hpp>
#include <argus/expr/mask.hpp>
#include <argus/shape/extent.hpp>
#include <argus/shape/shape.hpp>
#include <argus/shape/split.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace static_shape_test {

using argus::batch;
using argus::dyn;
using argus::head;
using argus::head_dim;
using argus::model;
using argus::seq;
using argus::shape;

// ---- Axes --------------------------------------------------------------------------------

static_assert(argus::Axis<batch<2>> && argus::Axis<seq<>> && argus::Axis<model<64>>);
static_assert(argus::Axis<head<8>> && argus::Axis<head_dim<8>>);
static_assert(!argus::Axis<int>);  // a number is not an axis
static_assert(!argus::Axis<std::integral_constant<std::size_t, 8>>);
static_assert(batch<>::static_extent == dyn);  // batch and seq default to run time
static_assert(seq<>::static_extent == dyn);
static_assert(argus::same_axis_kind<seq<16>, seq<dyn>>);    // kind, not extent
static_assert(!argus::same_axis_kind<seq<64>, model<64>>);  // equal sizes, different meaning
static_assert(!argus::same_axis_kind<head<8>, head_dim<8>>);
static_assert(std::is_same_v<argus::rebind_axis<seq<16>, 12>, seq<12>>);

static_assert(argus::extents_may_agree<16, 16>);
static_assert(!argus::extents_may_agree<16, 12>);
static_assert(argus::extents_may_agree<dyn, 12>);  // known at run time: checked then
static_assert(argus::extents_may_agree<12, dyn>);
static_assert(argus::common_extent<dyn, 12> == 12 && argus::common_extent<12, dyn> == 12);
static_assert(argus::common_extent<dyn, dyn> == dyn);

// ---- Shapes ------------------------------------------------------------------------------

using activation = shape<batch<2>, seq<16>, model<64>>;
using activation_dyn = shape<batch<>, seq<>, model<64>>;
using heads = shape<batch<2>, head<8>, seq<16>, head_dim<8>>;
using heads_dyn = shape<batch<dyn>, head<8>, seq<dyn>, head_dim<8>>;

static_assert(argus::Shape<activation> && argus::Shape<activation_dyn>);
static_assert(!argus::Shape<model<64>>);  // an axis is not a shape
static_assert(!argus::Shape<int>);
static_assert(activation::rank() == 3 && activation::rank_dynamic() == 0);
static_assert(activation_dyn::rank() == 3 && activation_dyn::rank_dynamic() == 2);
static_assert(activation::static_size() == 2 * 16 * 64);
static_assert(activation_dyn::static_size() == dyn);  // a run-time extent makes the size run-time
static_assert(activation_dyn::static_extent(0) == dyn && activation_dyn::static_extent(2) == 64);
static_assert(std::is_same_v<argus::axis_t<activation, 2>, model<64>>);
static_assert(argus::static_extent_v<activation, 1> == 16);
static_assert(argus::static_extent_v<activation_dyn, 1> == dyn);

// Run-time extents, in axis order, fill the dyn axes; static ones come from the type.
constexpr activation_dyn run_time_shape{3, 40};
static_assert(run_time_shape.extent(0) == 3 && run_time_shape.extent(1) == 40);
static_assert(run_time_shape.extent(2) == 64 && run_time_shape.size() == 3 * 40 * 64);
static_assert(activation{}.size() == 2 * 16 * 64);
// The constructor reports a wrong count or non-integer extents with a static_assert naming the
// rule (a requires-clause would only say "no matching constructor"), which is_constructible
// cannot observe; shape_accepts_run_time_extents states the same rules without the report.
static_assert(argus::shape_accepts_run_time_extents<activation_dyn, int, long>);
static_assert(!argus::shape_accepts_run_time_extents<activation_dyn, int>);  // two, not one
static_assert(!argus::shape_accepts_run_time_extents<activation_dyn, int, int, int>);
static_assert(!argus::shape_accepts_run_time_extents<activation_dyn, double, int>);  // integers

// shape_has_axes compares kinds in order, never extents.
static_assert(argus::shape_has_axes<activation, batch, seq, model>);
static_assert(argus::shape_has_axes<activation_dyn, batch, seq, model>);
static_assert(
    !argus::shape_has_axes<shape<batch<2>, model<64>, seq<64>>, batch, seq, model>);  // transposed
static_assert(!argus::shape_has_axes<activation, batch, seq>);               // rank 3, not 2
static_assert(!argus::shape_has_axes<activation, batch, seq, model, head>);  // rank 3, not 4
static_assert(argus::shape_has_axes<heads, batch, head, seq, head_dim>);

// ---- Split and merge heads ---------------------------------------------------------------

static_assert(std::is_same_v<argus::split_heads_shape<8, activation>, heads>);  // 64 = 8 * 8
static_assert(
    std::is_same_v<argus::split_heads_shape<8, activation_dyn>, heads_dyn>);  // dyn stays dyn
static_assert(std::is_same_v<argus::merge_heads_shape<heads>, activation>);
static_assert(std::is_same_v<argus::merge_heads_shape<heads_dyn>, activation_dyn>);
static_assert(std::is_same_v<argus::merge_heads_shape<argus::split_heads_shape<4, activation>>,
                             activation>);  // merge undoes split

// ---- Relations on static extents ---------------------------------------------------------

static_assert(argus::heads_divide_d_model<512, 8>);
static_assert(!argus::heads_divide_d_model<512, 7>);  // 512 % 7 != 0
static_assert(!argus::heads_divide_d_model<512, 0>);  // no heads
static_assert(argus::kv_heads_divide_heads<8, 2> && argus::kv_heads_divide_heads<8, 8>);
static_assert(!argus::kv_heads_divide_heads<8, 3>);  // 8 % 3 != 0
static_assert(!argus::kv_heads_divide_heads<8, 0>);
static_assert(argus::width_is_positive<1> && !argus::width_is_positive<0>);
static_assert(argus::query_width_equals_d_model<64, 64> &&
              !argus::query_width_equals_d_model<32, 64>);
static_assert(argus::key_width_equals_kdim<32, 32> && !argus::key_width_equals_kdim<64, 32>);
static_assert(argus::value_width_equals_vdim<48, 48> && !argus::value_width_equals_vdim<64, 48>);

static_assert(argus::w_q_rows_equal_d_model<64, 64> && !argus::w_q_rows_equal_d_model<32, 64>);
static_assert(argus::w_q_cols_equal_heads_times_d_k<64, 8, 8>);
static_assert(!argus::w_q_cols_equal_heads_times_d_k<48, 8, 8>);  // 48 != 8 * 8
static_assert(argus::w_k_rows_equal_kdim<32, 32> && !argus::w_k_rows_equal_kdim<64, 32>);
static_assert(argus::w_k_cols_equal_kv_heads_times_d_k<16, 2, 8>);
static_assert(!argus::w_k_cols_equal_kv_heads_times_d_k<64, 2, 8>);  // 64 != 2 * 8
static_assert(argus::w_v_rows_equal_vdim<48, 48> && !argus::w_v_rows_equal_vdim<64, 48>);
static_assert(argus::w_v_cols_equal_kv_heads_times_d_v<16, 2, 8>);
static_assert(!argus::w_v_cols_equal_kv_heads_times_d_v<64, 2, 8>);  // 64 != 2 * 8
static_assert(argus::w_o_rows_equal_heads_times_d_v<64, 8, 8>);
static_assert(!argus::w_o_rows_equal_heads_times_d_v<48, 8, 8>);  // 48 != 8 * 8
static_assert(argus::w_o_cols_equal_d_model<64, 64> && !argus::w_o_cols_equal_d_model<48, 64>);
static_assert(argus::b_q_length_equals_heads_times_d_k<64, 8, 8>);
static_assert(!argus::b_q_length_equals_heads_times_d_k<48, 8, 8>);  // 48 != 8 * 8
static_assert(argus::b_k_length_equals_kv_heads_times_d_k<16, 2, 8>);
static_assert(!argus::b_k_length_equals_kv_heads_times_d_k<32, 2, 8>);
static_assert(argus::b_v_length_equals_kv_heads_times_d_v<16, 2, 8>);
static_assert(!argus::b_v_length_equals_kv_heads_times_d_v<48, 2, 8>);
static_assert(argus::b_o_length_equals_d_model<64, 64> &&
              !argus::b_o_length_equals_d_model<48, 64>);

static_assert(argus::input_width_equals_weight_rows<64, 64>);
static_assert(!argus::input_width_equals_weight_rows<64, 32>);
static_assert(argus::bias_length_equals_weight_cols<64, 64>);
static_assert(!argus::bias_length_equals_weight_cols<48, 64>);
static_assert(argus::weight_heads_equal_input_heads<8, 8>);
static_assert(!argus::weight_heads_equal_input_heads<4, 8>);
static_assert(argus::heads_divide_width<64, 8> && !argus::heads_divide_width<64, 7>);  // 64 % 7
static_assert(!argus::heads_divide_width<64, 0>);
static_assert(argus::q_and_k_head_widths_agree<8, 8> && !argus::q_and_k_head_widths_agree<8, 16>);
static_assert(argus::kv_heads_divide_query_heads<8, 2>);
static_assert(!argus::kv_heads_divide_query_heads<8, 3>);  // 8 % 3 != 0
static_assert(!argus::kv_heads_divide_query_heads<8, 0>);

// The relations between lengths and batches, static: they must be equal.
static_assert(argus::k_and_v_lengths_agree<12, 12> && !argus::k_and_v_lengths_agree<12, 10>);
static_assert(argus::batches_agree<2, 2> && !argus::batches_agree<2, 3>);
static_assert(argus::mask_rows_equal_seq_q<16, 16> && !argus::mask_rows_equal_seq_q<20, 16>);
static_assert(argus::mask_cols_equal_seq_kv<12, 12> && !argus::mask_cols_equal_seq_kv<16, 12>);
static_assert(argus::padding_length_equals_seq_kv<12, 12>);
static_assert(!argus::padding_length_equals_seq_kv<16, 12>);
static_assert(argus::padding_batch_equals_batch<2, 2> && !argus::padding_batch_equals_batch<3, 2>);

// ... and with a run-time extent on either side they hold here (checked at run time instead).
static_assert(argus::k_and_v_lengths_agree<dyn, 10> && argus::k_and_v_lengths_agree<12, dyn>);
static_assert(argus::batches_agree<dyn, 3> && argus::batches_agree<2, dyn>);
static_assert(argus::batches_agree<dyn, dyn>);
static_assert(argus::mask_rows_equal_seq_q<dyn, 16> && argus::mask_rows_equal_seq_q<20, dyn>);
static_assert(argus::mask_cols_equal_seq_kv<dyn, 12> && argus::mask_cols_equal_seq_kv<16, dyn>);
static_assert(argus::padding_length_equals_seq_kv<dyn, 12>);
static_assert(argus::padding_length_equals_seq_kv<16, dyn>);
static_assert(argus::padding_batch_equals_batch<dyn, 2> &&
              argus::padding_batch_equals_batch<3, dyn>);

// Widths are never run-time: a dyn width is not "equal" to a static one.
static_assert(!argus::input_width_equals_weight_rows<dyn, 64>);
static_assert(!argus::heads_divide_width<dyn, 7>);

// ---- Relations on axes and value types ---------------------------------------------------

static_assert(argus::axes_are_batch_seq_model<activation>);
static_assert(argus::axes_are_batch_seq_model<activation_dyn>);
static_assert(!argus::axes_are_batch_seq_model<shape<batch<2>, model<64>, seq<64>>>);  // transposed
static_assert(!argus::axes_are_batch_seq_model<heads>);
static_assert(argus::axes_are_batch_head_seq_head_dim<heads>);
static_assert(!argus::axes_are_batch_head_seq_head_dim<activation>);  // not split
static_assert(
    !argus::axes_are_batch_head_seq_head_dim<shape<batch<2>, seq<16>, head<8>, head_dim<8>>>);
static_assert(argus::axes_are_batch_head_seq_seq<shape<batch<2>, head<8>, seq<16>, seq<12>>>);
static_assert(!argus::axes_are_batch_head_seq_seq<shape<batch<2>, head<8>, seq<16>, head_dim<16>>>);
static_assert(argus::axes_are_an_activation_or_split_heads<activation>);
static_assert(argus::axes_are_an_activation_or_split_heads<heads>);
static_assert(
    !argus::axes_are_an_activation_or_split_heads<shape<batch<2>, head<8>, seq<16>, seq<16>>>);
static_assert(argus::axes_are_a_stacked_or_per_head_weight<shape<model<64>, model<64>>>);
static_assert(argus::axes_are_a_stacked_or_per_head_weight<shape<head<8>, model<8>, head_dim<8>>>);
static_assert(!argus::axes_are_a_stacked_or_per_head_weight<shape<seq<64>, model<64>>>);
static_assert(argus::axes_are_a_stacked_weight<shape<model<64>, model<64>>>);
static_assert(
    !argus::axes_are_a_stacked_weight<shape<head<8>, model<64>, head_dim<8>>>);  // per head
static_assert(argus::axes_are_seq_seq<shape<seq<16>, seq<12>>>);
static_assert(!argus::axes_are_seq_seq<shape<batch<2>, seq<12>>>);  // a padding mask
static_assert(argus::axes_are_batch_seq<shape<batch<2>, seq<12>>>);
static_assert(!argus::axes_are_batch_seq<shape<seq<16>, seq<12>>>);  // a pair mask

static_assert(argus::value_types_agree<float, float>);
static_assert(!argus::value_types_agree<float, double>);  // no silent conversion
static_assert(argus::value_type_is_float_or_double<float>);
static_assert(argus::value_type_is_float_or_double<double>);
static_assert(!argus::value_type_is_float_or_double<int>);
static_assert(!argus::value_type_is_float_or_double<long double>);
static_assert(argus::mask_element_is_bool_or_uint8<bool>);
static_assert(argus::mask_element_is_bool_or_uint8<std::uint8_t>);
static_assert(!argus::mask_element_is_bool_or_uint8<float>);  // float logits: add_to_scores
static_assert(!argus::mask_element_is_bool_or_uint8<int>);

}  // namespace static_shape_test
