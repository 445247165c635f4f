// Reduced port of vllm::unified_attention_with_output (vllm/model_executor/layers/attention/
// attention.py; vllm/attention/layer.py in older trees): the out-variant attention op that
// vLLM's compiled graphs split on. Upstream registers it with direct_register_custom_op(
// mutates_args=["output", "output_block_scale"]), i.e. torch.library.infer_schema gives
//
//   unified_attention_with_output(Tensor query, Tensor key, Tensor value, Tensor(a3!) output,
//       str layer_name, Tensor? output_scale=None, Tensor(a6!)? output_block_scale=None,
//       Tensor? kv_cache_dummy_dep=None) -> ()
//
// (older trees: the first six arguments only). It looks the layer, its KV cache and the
// attention metadata up in the forward context by layer_name and calls the backend's
// forward(..., output=output, output_scale=..., output_block_scale=...), which writes
// output[:num_actual_tokens] and leaves the rest (cudagraph padding rows) alone. Its fake
// returns nothing.
//
// Reduced schema, registered as opc_vllm::unified_attention_with_output:
//
//   unified_attention_with_output(Tensor query, Tensor key, Tensor value, Tensor(a3!) output,
//       str layer_name, Tensor? output_scale=None) -> ()
//
// Dropped: output_block_scale (the NVFP4 block-scale output, the second mutated argument),
// kv_cache_dummy_dep (an ordering-only dependency, unused by the body), and everything the
// forward context holds: the paged KV cache and slot mapping (key/value here are the
// sequence's own rows, not a cache update), multi-sequence metadata, sliding window,
// softcap, alibi, sinks. layer_name is accepted and ignored.
//
// Semantics of the port (shapes [T, H, D]: the [num_tokens, num_heads, head_size] views
// Attention.forward passes in; key and value [T', Hkv, D] / [T', Hkv, Dv], H % Hkv == 0 (GQA),
// output [T'', H, Dv]):
//   n = opc::sim::get_int("num_actual_tokens") (forward_context.attn_metadata's
//   num_actual_tokens); one causal sequence: for i < n, head h, kv head h / (H / Hkv):
//     s_j = (q[i,h] . k[j,kvh]) / sqrt(D) for j <= i;  p = softmax(s) (float32);
//     output[i,h] = sum_j p_j v[j,kvh]                  (rounded to output's dtype)
//   rows n.. of output are padding: never written. Query/key/value rows n.. are never read.
//   output_scale given (float32, one element): the stand-in for the fused static fp8 output
//   quant: each value is quantised as fp8_e4m3fn(fmax(-448, fmin(x * (1 / scale), 448)))
//   (the _C::static_scaled_fp8_quant arithmetic, ops/quantization.cc) and dequantised back
//   (fp8 value * scale) into output, whose dtype stays the query's.
// Checks (port's own, upstream's backends assert similar): query/key/value/output 3-D;
// heads and head sizes agree; 0 <= n <= every tensor's dim 0; output_scale one float32
// element. Any strides are honoured (indexing goes through strides).
//
// Regression variants (same schema, opc_regress::):
//   unified_attention_with_output_phantom: computes correctly into a temporary and never
//     copies it into output -- the "phantom tensor": the caller's output is left untouched.
//   unified_attention_with_output_nan_padding: attends for ALL T rows of query (padding
//     query rows included, reading key/value rows up to T), so output's padding rows get
//     values computed from padding -- garbage or NaN; and with output_scale absent it
//     quantises dynamically per tensor: scale = amax(|output|) / 448 over ALL rows (a
//     NaN-propagating max, as torch's x.abs().max() in vLLM's native/Inductor per-tensor
//     QuantFP8 path), then quantises and dequantises output in place -- so the real rows
//     depend on the padding rows (NaN padding makes every real row NaN; large padding values
//     coarsen them). vLLM PRs 37442 and 37815.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <c10/util/Float8_e4m3fn.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ops/sim_context.h"
#include "ops/sym_sized.h"

namespace {

using opc::port::SizeOf;
using opc::port::SymSized;

constexpr float kFp8Max = 448.0f;

template <typename Int>
struct AttnShapeOf {
  Int heads, kv_heads, head_size, head_size_v;
};
using AttnShape = AttnShapeOf<int64_t>;

// T: at::Tensor for the CPU kernels, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
AttnShapeOf<SizeOf<T>> attn_checks(const T& query, const T& key, const T& value, const T& output,
                                   const std::optional<T>& output_scale) {
  TORCH_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3 && output.dim() == 3,
              "opc port: query, key, value and output must be [T, heads, head_size]");
  AttnShapeOf<SizeOf<T>> s{query.size(1), key.size(1), query.size(2), value.size(2)};
  TORCH_CHECK(s.kv_heads > 0 && s.heads % s.kv_heads == 0,
              "opc port: num_heads (", s.heads, ") must be a multiple of num_kv_heads (",
              s.kv_heads, ")");
  TORCH_CHECK(value.size(1) == s.kv_heads, "opc port: key and value head counts differ");
  TORCH_CHECK(key.size(2) == s.head_size, "opc port: query and key head sizes differ");
  TORCH_CHECK(output.size(1) == s.heads && output.size(2) == s.head_size_v,
              "opc port: output must be [T, num_heads, value head_size]");
  for (const auto* t : {&query, &key, &value, &output})
    TORCH_CHECK(at::isFloatingType(t->scalar_type()) && t->scalar_type() != at::kDouble &&
                    !at::isFloat8Type(t->scalar_type()),
                "opc port: attention tensors must be float32, float16 or bfloat16");
  if (output_scale) {
    TORCH_CHECK(output_scale->scalar_type() == at::kFloat && output_scale->numel() == 1,
                "opc port: output_scale must be a float32 tensor of one element");
  }
  return s;
}

inline float fp8_round_trip(float x, float scale) {
  const float inv = 1.0f / scale;
  const float r = std::fmax(-kFp8Max, std::fmin(x * inv, kFp8Max));
  return static_cast<float>(static_cast<c10::Float8_e4m3fn>(r)) * scale;
}

// Causal attention of query rows [0, rows) over key/value rows [0, i], into a dense
// float32 [rows, H, Dv] result.
std::vector<float> attend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                          const AttnShape& s, int64_t rows) {
  const at::Tensor q = query.narrow(0, 0, rows).to(at::kFloat);
  const at::Tensor k = key.narrow(0, 0, rows).to(at::kFloat);
  const at::Tensor v = value.narrow(0, 0, rows).to(at::kFloat);
  const auto qa = q.accessor<float, 3>();
  const auto ka = k.accessor<float, 3>();
  const auto va = v.accessor<float, 3>();
  const int64_t group = s.heads / s.kv_heads;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  std::vector<float> out(static_cast<size_t>(rows * s.heads * s.head_size_v), 0.0f);
  std::vector<float> p(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kh = h / group;
      float m = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < s.head_size; ++d) dot += qa[i][h][d] * ka[j][kh][d];
        p[j] = dot * sm_scale;
        m = std::fmax(m, p[j]);
      }
      float denom = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        p[j] = std::exp(p[j] - m);
        denom += p[j];
      }
      float* o = out.data() + (i * s.heads + h) * s.head_size_v;
      for (int64_t j = 0; j <= i; ++j) {
        const float w = p[j] / denom;
        for (int64_t d = 0; d < s.head_size_v; ++d) o[d] += w * va[j][kh][d];
      }
    }
  }
  return out;
}

// output[:rows] = result (optionally through the static fp8 round trip), honouring strides.
void store_rows(at::Tensor& output, const std::vector<float>& result, const AttnShape& s,
                int64_t rows, std::optional<float> static_scale) {
  if (rows == 0) return;
  at::Tensor r = at::from_blob(const_cast<float*>(result.data()), {rows, s.heads, s.head_size_v},
                               at::TensorOptions().dtype(at::kFloat))
                     .clone();
  if (static_scale) {
    float* d = r.data_ptr<float>();
    for (int64_t i = 0; i < r.numel(); ++i) d[i] = fp8_round_trip(d[i], *static_scale);
  }
  output.narrow(0, 0, rows).copy_(r);
}

int64_t actual_tokens(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                      const at::Tensor& output) {
  const int64_t n = opc::sim::get_int("num_actual_tokens");
  TORCH_CHECK(n >= 0 && n <= query.size(0) && n <= key.size(0) && n <= value.size(0) &&
                  n <= output.size(0),
              "opc port: num_actual_tokens ", n, " outside [0, rows] of query (",
              query.size(0), "), key (", key.size(0), "), value (", value.size(0),
              ") or output (", output.size(0), ")");
  return n;
}

std::optional<float> scale_of(const std::optional<at::Tensor>& output_scale) {
  if (!output_scale) return std::nullopt;
  return output_scale->to(at::kFloat).item<float>();
}

void unified_attention_with_output_cpu(const at::Tensor& query, const at::Tensor& key,
                                       const at::Tensor& value, at::Tensor& output,
                                       std::string layer_name,
                                       const std::optional<at::Tensor>& output_scale) {
  const AttnShape s = attn_checks(query, key, value, output, output_scale);
  const int64_t n = actual_tokens(query, key, value, output);
  store_rows(output, attend(query, key, value, s, n), s, n, scale_of(output_scale));
}

void unified_attention_with_output_phantom_cpu(const at::Tensor& query, const at::Tensor& key,
                                               const at::Tensor& value, at::Tensor& output,
                                               std::string layer_name,
                                               const std::optional<at::Tensor>& output_scale) {
  const AttnShape s = attn_checks(query, key, value, output, output_scale);
  const int64_t n = actual_tokens(query, key, value, output);
  // The bug: the backend writes into a tensor of its own (e.g. output reshaped into a copy
  // instead of a view), so the caller's output never sees the result.
  at::Tensor phantom = at::empty_like(output);
  store_rows(phantom, attend(query, key, value, s, n), s, n, scale_of(output_scale));
}

void unified_attention_with_output_nan_padding_cpu(const at::Tensor& query, const at::Tensor& key,
                                                   const at::Tensor& value, at::Tensor& output,
                                                   std::string layer_name,
                                                   const std::optional<at::Tensor>& output_scale) {
  const AttnShape s = attn_checks(query, key, value, output, output_scale);
  actual_tokens(query, key, value, output);  // read, then ignored: the bug
  const int64_t rows = output.size(0);
  TORCH_CHECK(query.size(0) >= rows && key.size(0) >= rows && value.size(0) >= rows,
              "opc port: query/key/value have fewer rows than output");
  std::vector<float> result = attend(query, key, value, s, rows);
  if (output_scale) {
    store_rows(output, result, s, rows, scale_of(output_scale));
    return;
  }
  // Dynamic per-tensor fp8 quant over every row of output, padding included.
  float amax = 0.0f;
  for (const float x : result) {
    const float a = std::fabs(x);
    if (std::isnan(a) || std::isnan(amax)) {
      amax = NAN;
    } else if (a > amax) {
      amax = a;
    }
  }
  constexpr float kMinScale = 1.0f / (kFp8Max * 512.0f);
  float scale = amax / kFp8Max;
  if (scale < kMinScale) scale = kMinScale;  // NaN stays NaN
  for (float& x : result) x = fp8_round_trip(x, scale);
  store_rows(output, result, s, rows, std::nullopt);
}

void unified_attention_with_output_meta(const at::Tensor& query, const at::Tensor& key,
                                        const at::Tensor& value, at::Tensor& output,
                                        std::string layer_name,
                                        const std::optional<at::Tensor>& output_scale) {
  attn_checks<SymSized>(query, key, value, output, output_scale);
}

}  // namespace

#define OPC_ATTN_ARGS                                                                   \
  "(Tensor query, Tensor key, Tensor value, Tensor(a3!) output, str layer_name, " \
  "Tensor? output_scale=None) -> ()"

TORCH_LIBRARY_FRAGMENT(opc_vllm, m) {
  m.def("unified_attention_with_output" OPC_ATTN_ARGS);
}
TORCH_LIBRARY_IMPL(opc_vllm, CPU, m) {
  m.impl("unified_attention_with_output", &unified_attention_with_output_cpu);
}
TORCH_LIBRARY_IMPL(opc_vllm, Meta, m) {
  m.impl("unified_attention_with_output", &unified_attention_with_output_meta);
}

TORCH_LIBRARY_FRAGMENT(opc_regress, m) {
  m.def("unified_attention_with_output_phantom" OPC_ATTN_ARGS);
  m.def("unified_attention_with_output_nan_padding" OPC_ATTN_ARGS);
}
TORCH_LIBRARY_IMPL(opc_regress, CPU, m) {
  m.impl("unified_attention_with_output_phantom", &unified_attention_with_output_phantom_cpu);
  m.impl("unified_attention_with_output_nan_padding",
         &unified_attention_with_output_nan_padding_cpu);
}
// Upstream's fake does nothing; so do these (the checks aside).
TORCH_LIBRARY_IMPL(opc_regress, Meta, m) {
  m.impl("unified_attention_with_output_phantom", &unified_attention_with_output_meta);
  m.impl("unified_attention_with_output_nan_padding", &unified_attention_with_output_meta);
}
