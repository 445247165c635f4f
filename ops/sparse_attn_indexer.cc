// Reduced port of vllm::sparse_attn_indexer (vllm/model_executor/layers/sparse_attn_indexer.py,
// DeepSeek V3.2's lightning indexer). Upstream registers it with direct_register_custom_op(
// mutates_args=["topk_indices_buffer"]); torch.library.infer_schema gives (current tree)
//
//   sparse_attn_indexer(Tensor hidden_states, str k_cache_prefix, Tensor kv_cache,
//       Tensor q_quant, Tensor? q_scale, Tensor k, Tensor weights, SymInt quant_block_size,
//       str? scale_fmt, SymInt topk_tokens, SymInt head_dim, SymInt max_model_len,
//       SymInt total_seq_lens, Tensor(a13!) topk_indices_buffer, bool skip_k_cache_insert,
//       bool use_pcp, bool use_fp4_cache=False, SymInt dcp_rank=0, SymInt dcp_world_size=1,
//       SymInt cp_kv_cache_interleave_size=1, bool skip_topk_buffer_clear=False) -> Tensor
//
// The body fills topk_indices_buffer[:hidden_states.shape[0]] with -1, writes each token's
// top-k key indices into topk_indices_buffer[:num_tokens, :topk_tokens] (fp8 mqa logits +
// top_k_per_row kernels) and `return topk_indices_buffer`; the fake also returns
// topk_indices_buffer. A return aliasing a mutated input with no alias annotation on the
// return: pytorch issue 182006. (Correct shapes: return (), or annotate it Tensor(a13!).)
//
// Reduced schema (argument names kept where they survive the reduction):
//
//   sparse_attn_indexer(Tensor q, Tensor k, Tensor weights, Tensor(a3!) topk_indices_buffer,
//       SymInt topk_tokens) -> Tensor
//
// Dropped: hidden_states (only its row count is used; q's here), the indexer K cache
// (k_cache_prefix, kv_cache, quant_block_size, scale_fmt, skip_k_cache_insert: the fp8 K
// insert), fp8/fp4 quantisation of q (q_quant -> plain q, q_scale, use_fp4_cache), the
// prefill/decode split, causal masking by sequence lengths and paging (head_dim,
// max_model_len, total_seq_lens), context parallelism (use_pcp, dcp_*, cp_*), and
// skip_topk_buffer_clear (always cleared).
//
// Semantics: q [T, H, D], k [N, D], weights [T, H], topk_indices_buffer int32 [B >= T, C >=
// topk_tokens]; num_tokens = T:
//   logits[t, n] = sum_h weights[t, h] * relu(q[t, h] . k[n])   (float32; relu drops NaN)
//   buffer[:T, :] = -1; buffer[t, :min(topk_tokens, N)] = the indices of the largest logits,
//   in decreasing order, ties to the lower index (NaN logits rank last). Rows T.. of the
//   buffer are untouched.
// opc_vllm::sparse_attn_indexer (fixed) returns a fresh tensor: a copy of buffer[:T]
//   ([T, C] int32), never aliasing the buffer; its Meta returns an empty [T, C].
// opc_regress::sparse_attn_indexer_returns_buffer returns the buffer itself, as upstream
//   does (and its Meta returns the buffer itself, as upstream's fake does).
// Port's own checks ("opc port:"): the shapes above, buffer int32, 0 <= topk_tokens <= C,
// B >= T (upstream would write out of bounds).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/sym_sized.h"

namespace {

using opc::port::SizeOf;
using opc::port::SymSized;

// T: at::Tensor for the CPU kernels, SymSized for the Meta ones (ops/sym_sized.h), where
// topk_tokens, a SymInt in the schema, may be a symbol as well.
template <typename T>
void indexer_checks(const T& q, const T& k, const T& weights, const T& buffer,
                    const SizeOf<T>& topk_tokens) {
  TORCH_CHECK(q.dim() == 3 && k.dim() == 2 && weights.dim() == 2 && buffer.dim() == 2,
              "opc port: expected q [T, H, D], k [N, D], weights [T, H], "
              "topk_indices_buffer [B, C]");
  TORCH_CHECK(k.size(1) == q.size(2), "opc port: q and k head_dim differ");
  TORCH_CHECK(weights.size(0) == q.size(0) && weights.size(1) == q.size(1),
              "opc port: weights must be [T, H]");
  TORCH_CHECK(buffer.scalar_type() == at::kInt, "opc port: topk_indices_buffer must be int32");
  TORCH_CHECK(topk_tokens >= 0 && topk_tokens <= buffer.size(1), "opc port: topk_tokens ",
              topk_tokens, " outside [0, topk_indices_buffer.size(1) = ", buffer.size(1), "]");
  TORCH_CHECK(buffer.size(0) >= q.size(0), "opc port: topk_indices_buffer has ",
              buffer.size(0), " rows for ", q.size(0), " tokens");
}

void fill_topk(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& w_in,
               at::Tensor& buffer, int64_t topk_tokens) {
  const int64_t T = q_in.size(0), H = q_in.size(1), D = q_in.size(2), N = k_in.size(0);
  if (T == 0) return;
  buffer.narrow(0, 0, T).fill_(-1);
  const at::Tensor q = q_in.to(at::kFloat).contiguous();
  const at::Tensor k = k_in.to(at::kFloat).contiguous();
  const at::Tensor w = w_in.to(at::kFloat).contiguous();
  const auto qa = q.accessor<float, 3>();
  const auto ka = k.accessor<float, 2>();
  const auto wa = w.accessor<float, 2>();
  auto ba = buffer.accessor<int32_t, 2>();
  const int64_t kk = std::min(topk_tokens, N);
  std::vector<float> logits(static_cast<size_t>(N));
  std::vector<int64_t> order(static_cast<size_t>(N));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t h = 0; h < H; ++h) {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += qa[t][h][d] * ka[n][d];
        acc += wa[t][h] * std::fmax(dot, 0.0f);
      }
      logits[n] = acc;
    }
    std::iota(order.begin(), order.end(), int64_t{0});
    auto before = [&](int64_t a, int64_t b) {
      const float la = logits[a], lb = logits[b];
      const bool na = std::isnan(la), nb = std::isnan(lb);
      if (na != nb) return nb;  // a non-NaN logit ranks before a NaN one
      if (!na && la != lb) return la > lb;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + kk, order.end(), before);
    for (int64_t j = 0; j < kk; ++j) ba[t][j] = static_cast<int32_t>(order[j]);
  }
}

at::Tensor sparse_attn_indexer_cpu(const at::Tensor& q, const at::Tensor& k,
                                   const at::Tensor& weights, at::Tensor& topk_indices_buffer,
                                   int64_t topk_tokens) {
  indexer_checks(q, k, weights, topk_indices_buffer, topk_tokens);
  fill_topk(q, k, weights, topk_indices_buffer, topk_tokens);
  return topk_indices_buffer.narrow(0, 0, q.size(0)).clone();
}

at::Tensor sparse_attn_indexer_returns_buffer_cpu(const at::Tensor& q, const at::Tensor& k,
                                                  const at::Tensor& weights,
                                                  at::Tensor& topk_indices_buffer,
                                                  int64_t topk_tokens) {
  indexer_checks(q, k, weights, topk_indices_buffer, topk_tokens);
  fill_topk(q, k, weights, topk_indices_buffer, topk_tokens);
  return topk_indices_buffer;
}

at::Tensor sparse_attn_indexer_meta(const at::Tensor& q, const at::Tensor& k,
                                    const at::Tensor& weights, at::Tensor& topk_indices_buffer,
                                    c10::SymInt topk_tokens) {
  indexer_checks<SymSized>(q, k, weights, topk_indices_buffer, topk_tokens);
  return at::empty_symint({q.sym_size(0), topk_indices_buffer.sym_size(1)},
                          topk_indices_buffer.options());
}

at::Tensor sparse_attn_indexer_returns_buffer_meta(const at::Tensor& q, const at::Tensor& k,
                                                   const at::Tensor& weights,
                                                   at::Tensor& topk_indices_buffer,
                                                   c10::SymInt topk_tokens) {
  indexer_checks<SymSized>(q, k, weights, topk_indices_buffer, topk_tokens);
  return topk_indices_buffer;  // upstream's fake: `return topk_indices_buffer`
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_vllm, m) {
  m.def(
      "sparse_attn_indexer(Tensor q, Tensor k, Tensor weights, Tensor(a3!) topk_indices_buffer, "
      "SymInt topk_tokens) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_vllm, CPU, m) {
  m.impl("sparse_attn_indexer", &sparse_attn_indexer_cpu);
}
TORCH_LIBRARY_IMPL(opc_vllm, Meta, m) {
  m.impl("sparse_attn_indexer", &sparse_attn_indexer_meta);
}

TORCH_LIBRARY_FRAGMENT(opc_regress, m) {
  m.def(
      "sparse_attn_indexer_returns_buffer(Tensor q, Tensor k, Tensor weights, "
      "Tensor(a3!) topk_indices_buffer, SymInt topk_tokens) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_regress, CPU, m) {
  m.impl("sparse_attn_indexer_returns_buffer", &sparse_attn_indexer_returns_buffer_cpu);
}
TORCH_LIBRARY_IMPL(opc_regress, Meta, m) {
  m.impl("sparse_attn_indexer_returns_buffer", &sparse_attn_indexer_returns_buffer_meta);
}
