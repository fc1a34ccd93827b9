// argus/io/pytorch_mha.hpp -- io layer (optional): a PyTorch nn.MultiheadAttention's
// state dict into a typed argus::multi_head_attention.
//
//     using mha_t = argus::multi_head_attention<512, 8>;
//     argus::safetensors_file f("mha.safetensors");       // or argus::npy_directory("mha/")
//     mha_t mha = argus::load_pytorch_mha<mha_t>(f);        // every shape and dtype checked
//
// torch computes x·Wᵀ + b and stores, for embed_dim E:
//   in_proj_weight (3E, E) = [W_qᵀ; W_kᵀ; W_vᵀ]   when kdim == vdim == E
//   q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim)   otherwise
//   in_proj_bias (3E) = [b_q; b_k; b_v], out_proj.weight (E, E) = W_oᵀ, out_proj.bias (E)
// argus holds x·W (W_q = in_proj_weight[0:E]ᵀ, ...), so each weight is transposed on load.
// The module's static dims fix every expected shape: rows H·d_k, G·d_k and G·d_v (H query
// heads, G key/value heads), which is torch's 3E when G = H and d_k = d_v = E/H; the same
// names with those rows also load grouped-query or d_k != d_v modules exported by hand.
//
// Everything is read and checked into a new module before the call returns it: a missing
// tensor, a shape that does not fit, a float64 tensor for a float module, a bias the module
// lacks (or lacks a bias it has) or add_bias_kv's bias_k/bias_v throw load_error naming the
// file, the tensor and what was expected, and nothing is half-loaded. Values are loaded as
// they are, a NaN or an infinity included (as torch's load_state_dict does).
#pragma once

#include <argus/expr/attention.hpp>
#include <argus/io/stored_tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace argus {

namespace detail {

template <MultiHeadAttentionModule M>
std::string module_description() {
  return "multi_head_attention (d_model " + std::to_string(M::d_model) + ", heads " +
         std::to_string(M::heads) + ", kv_heads " + std::to_string(M::kv_heads) + ", d_k " +
         std::to_string(M::d_k) + ", d_v " + std::to_string(M::d_v) + ", kdim " +
         std::to_string(M::kdim) + ", vdim " + std::to_string(M::vdim) +
         (M::has_bias ? ", bias" : ", no bias") + ", " +
         (std::is_same_v<typename M::value_type, float> ? "float" : "double") + ")";
}

/// Reads `key`, checks its shape against `shape` and converts it to T.
template <class T, MultiHeadAttentionModule M, TensorSource Src>
std::vector<T> read_checked(const Src& src, const std::string& key,
                            const std::vector<std::size_t>& shape, const char* role) {
  if (!src.contains(key))
    throw load_error(src.origin(key) + ": missing tensor '" + key + "' (" + role + ", shape " +
                     shape_string(shape) + " for the " + module_description<M>() + ")");
  const stored_tensor t = src.read(key);
  if (t.shape != shape)
    throw load_error(t.where() + " has shape " + shape_string(t.shape) + ", expected " +
                     shape_string(shape) + " (" + role + ") for the " + module_description<M>());
  return t.template values<T>();
}

/// w (rows, cols) = the transpose of torch rows [r0, r0 + cols) of a (.., rows) matrix.
template <class T>
void transpose_rows_into(T* w, std::size_t rows, std::size_t cols, const std::vector<T>& torch,
                         std::size_t r0) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) w[i * cols + j] = torch[(r0 + j) * rows + i];
}

/// load_pytorch_mha's work, once its arguments are accepted.
template <MultiHeadAttentionModule M, TensorSource Src>
M load_pytorch_mha_accepted(const Src& src, std::string_view prefix) {
  using T = typename M::value_type;
  constexpr std::size_t e = M::d_model, q_rows = M::heads * M::d_k, k_rows = M::kv_heads * M::d_k,
                        v_rows = M::kv_heads * M::d_v, o_cols = M::heads * M::d_v;
  std::string p(prefix);
  if (!p.empty() && p.back() != '.') p += '.';
  const std::string packed = p + "in_proj_weight";
  const std::string sep_q = p + "q_proj_weight", sep_k = p + "k_proj_weight",
                    sep_v = p + "v_proj_weight";
  const bool has_packed = src.contains(packed);
  const bool has_separate = src.contains(sep_q) || src.contains(sep_k) || src.contains(sep_v);

  for (const std::string& kv_bias : {p + "bias_k", p + "bias_v"})
    if (src.contains(kv_bias))
      throw load_error(src.origin(kv_bias) + ": tensor '" + kv_bias +
                       "' comes from add_bias_kv=True, "
                       "which argus::multi_head_attention does not support");
  if (has_packed && has_separate)
    throw load_error(src.origin(packed) + ": both '" + packed +
                     "' and separate q/k/v_proj_weight "
                     "tensors are present; a state dict holds one or the other");
  if (!has_packed && !has_separate)
    throw load_error(src.origin(packed) + ": missing tensor '" + packed + "' (or '" + sep_q +
                     "', '" + sep_k + "', '" + sep_v +
                     "' when kdim/vdim differ from embed_dim) for the " +
                     detail::module_description<M>());

  M m;
  if (has_packed) {
    if constexpr (M::kdim != e || M::vdim != e) {
      throw load_error(src.origin(packed) + ": tensor '" + packed +
                       "' is a packed projection, which "
                       "needs kdim == vdim == d_model, but the module is a " +
                       detail::module_description<M>() + "; expected '" + sep_q + "', '" + sep_k +
                       "' and '" + sep_v + "'");
    } else {
      const auto w = detail::read_checked<T, M>(src, packed, {q_rows + k_rows + v_rows, e},
                                                "in_proj_weight = [W_q^T; W_k^T; W_v^T]");
      detail::transpose_rows_into(m.w_q.data(), e, q_rows, w, 0);
      detail::transpose_rows_into(m.w_k.data(), e, k_rows, w, q_rows);
      detail::transpose_rows_into(m.w_v.data(), e, v_rows, w, q_rows + k_rows);
    }
  } else {
    const auto wq = detail::read_checked<T, M>(src, sep_q, {q_rows, e}, "q_proj_weight = W_q^T");
    const auto wk =
        detail::read_checked<T, M>(src, sep_k, {k_rows, M::kdim}, "k_proj_weight = W_k^T");
    const auto wv =
        detail::read_checked<T, M>(src, sep_v, {v_rows, M::vdim}, "v_proj_weight = W_v^T");
    detail::transpose_rows_into(m.w_q.data(), e, q_rows, wq, 0);
    detail::transpose_rows_into(m.w_k.data(), M::kdim, k_rows, wk, 0);
    detail::transpose_rows_into(m.w_v.data(), M::vdim, v_rows, wv, 0);
  }
  const auto wo = detail::read_checked<T, M>(src, p + "out_proj.weight", {e, o_cols},
                                             "out_proj.weight = W_o^T");
  detail::transpose_rows_into(m.w_o.data(), o_cols, e, wo, 0);

  const std::string in_bias = p + "in_proj_bias", out_bias = p + "out_proj.bias";
  if constexpr (M::has_bias) {
    const auto b = detail::read_checked<T, M>(src, in_bias, {q_rows + k_rows + v_rows},
                                              "in_proj_bias = [b_q; b_k; b_v]");
    std::copy_n(b.begin(), q_rows, m.b_q.data());
    std::copy_n(b.begin() + std::ptrdiff_t(q_rows), k_rows, m.b_k.data());
    std::copy_n(b.begin() + std::ptrdiff_t(q_rows + k_rows), v_rows, m.b_v.data());
    const auto bo = detail::read_checked<T, M>(src, out_bias, {e}, "out_proj.bias = b_o");
    std::copy_n(bo.begin(), e, m.b_o.data());
  } else {
    for (const std::string& b : {in_bias, out_bias})
      if (src.contains(b))
        throw load_error(src.origin(b) + ": tensor '" + b +
                         "' is a bias, but the module was declared "
                         "without biases (mha_options{.bias = false}); declare it with biases, or "
                         "export from nn.MultiheadAttention(..., bias=False)");
  }
  return m;
}

}  // namespace detail

/// The module M with the weights of the nn.MultiheadAttention state dict in src, whose keys
/// start with `prefix` ("" for the module itself, "encoder.layers.0.self_attn" for one inside
/// a model; a '.' is added when missing). Throws load_error (see the top of this header).
/// M is a multi_head_attention (argument_is_a_multi_head_attention), src a safetensors_file
/// or an npy_directory (argument_is_a_tensor_source): checked in that order, the first broken
/// rule reported once.
template <class M, class Src>
auto load_pytorch_mha(const Src& src, std::string_view prefix = {}) {
  if constexpr (!MultiHeadAttentionModule<M>) {
    static_assert(MultiHeadAttentionModule<M>,
                  "argument_is_a_multi_head_attention: argus::load_pytorch_mha<M>(src) loads the "
                  "weights of an argus::multi_head_attention M; M is not one");
    return detail::rejected{};
  } else if constexpr (!argument_is_a_tensor_source<Src>) {
    static_assert(argument_is_a_tensor_source<Src>,
                  "argument_is_a_tensor_source: argus::load_pytorch_mha<M>(src) reads src, an "
                  "argus::safetensors_file or an argus::npy_directory (open a path first: "
                  "argus::safetensors_file(\"mha.safetensors\"))");
    return detail::rejected{};
  } else {
    return detail::load_pytorch_mha_accepted<M>(src, prefix);
  }
}

}  // namespace argus
