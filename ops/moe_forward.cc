// Reduced port of vllm::moe_forward (vllm/model_executor/layers/fused_moe/layer.py), the
// custom op FusedMoE.forward goes through so that torch.compile treats the experts as opaque.
// At vLLM PR 20152 (June 2025) it was
//
//   def moe_forward(hidden_states, router_logits, layer_name: str) -> torch.Tensor:
//       self = get_forward_context().no_compile_layers[layer_name]
//       return self.forward_impl(hidden_states, router_logits)
//   fake: torch.empty_like(hidden_states)
//   direct_register_custom_op("moe_forward", ..., mutates_args=["hidden_states"],
//                             tags=(torch.Tag.needs_fixed_stride_order,))
//
// i.e. moe_forward(Tensor(a0!) hidden_states, Tensor router_logits, str layer_name) -> Tensor.
// Before the PR, mutates_args=[]: moe_forward(Tensor hidden_states, Tensor router_logits,
// str layer_name) -> Tensor -- but the unquantized experts path calls fused_experts(...,
// inplace=True), whose kernels write the MoE result into hidden_states (out_hidden_states =
// hidden_states), so hidden_states was mutated without the schema saying so ("The inplace
// option on fused_experts can cause hidden_states to sometimes get mutated when calling
// moe_forward", PR 20152; it broke tests/models/language/generation/test_common.py with
// TitanML/tiny-mixtral after PR 19717). Later trees add shared_experts_input, input_ids,
// hidden_dim_unpadded and return (shared_out, fused_out); mutates_args is still
// ["hidden_states"].
//
// Reduced schema, opc_vllm::moe_forward:
//
//   moe_forward(Tensor(a0!) hidden_states, Tensor router_logits, Tensor w, SymInt top_k)
//       -> Tensor
//
// Dropped: layer_name and the layer it names -- its expert weights come in as `w`, its top_k
// as `top_k`; quantisation, the gated activation (w13/w2 pairs), grouped top-k, renormalize,
// expert parallelism and the TP all-reduce.
// Semantics (the in-place experts path): hidden_states [T, H], router_logits [T, E],
// w [E, H, H] (one linear expert each):
//   p = softmax(router_logits[t]) (float32); the top_k experts by p, ties to the lower id;
//   y[t] = sum over chosen e of p_e * (w[e] @ hidden_states[t])     (float32)
//   hidden_states[t] <- y[t] rounded to its dtype (every row computed from the original
//   input before any row is written, as fused_experts' chunks read before they write),
//   and a fresh copy of the result is returned. (Upstream's fused_experts(inplace=True)
//   returns hidden_states itself, and with TP = 1 forward_impl hands that straight back;
//   the port returns a copy, as the fake's empty_like promises, so that the only defect the
//   regression carries is the undeclared mutation.)
// opc_regress::moe_forward_pr20152: the same kernel under the schema before PR 20152 --
//   moe_forward_pr20152(Tensor hidden_states, Tensor router_logits, Tensor w, SymInt top_k)
//   -> Tensor -- writing hidden_states anyway.
// Meta (both): empty_like(hidden_states), as upstream's fake.
// Port's own checks ("opc port:"): the shapes above, 1 <= top_k <= E.
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

// Tensor: at::Tensor for the CPU kernels, SymSized for the Meta ones (ops/sym_sized.h), where
// top_k, a SymInt in the schema, may be a symbol as well.
template <typename Tensor>
void moe_checks(const Tensor& hidden_states, const Tensor& router_logits, const Tensor& w,
                const SizeOf<Tensor>& top_k) {
  TORCH_CHECK(hidden_states.dim() == 2 && router_logits.dim() == 2 && w.dim() == 3,
              "opc port: expected hidden_states [T, H], router_logits [T, E], w [E, H, H]");
  const auto T = hidden_states.size(0), H = hidden_states.size(1), E = router_logits.size(1);
  TORCH_CHECK(router_logits.size(0) == T, "opc port: router_logits must have T rows");
  TORCH_CHECK(w.size(0) == E && w.size(1) == H && w.size(2) == H,
              "opc port: w must be [num_experts, H, H]");
  TORCH_CHECK(top_k >= 1 && top_k <= E, "opc port: top_k ", top_k, " outside [1, ", E, "]");
}

at::Tensor moe_experts_inplace(at::Tensor& hidden_states, const at::Tensor& router_logits,
                               const at::Tensor& w_in, int64_t top_k) {
  moe_checks(hidden_states, router_logits, w_in, top_k);
  const int64_t T = hidden_states.size(0), H = hidden_states.size(1), E = router_logits.size(1);
  const at::Tensor x = hidden_states.to(at::kFloat).contiguous();  // read before any write
  const at::Tensor g = router_logits.to(at::kFloat).contiguous();
  const at::Tensor w = w_in.to(at::kFloat).contiguous();
  const auto xa = x.accessor<float, 2>();
  const auto ga = g.accessor<float, 2>();
  const auto wa = w.accessor<float, 3>();
  at::Tensor y = at::zeros({T, H}, at::TensorOptions().dtype(at::kFloat));
  auto ya = y.accessor<float, 2>();
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<int64_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    float m = -INFINITY;
    for (int64_t e = 0; e < E; ++e) m = std::fmax(m, ga[t][e]);
    float denom = 0.0f;
    for (int64_t e = 0; e < E; ++e) {
      p[e] = std::exp(ga[t][e] - m);
      denom += p[e];
    }
    for (int64_t e = 0; e < E; ++e) p[e] /= denom;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (std::isnan(p[a]) != std::isnan(p[b])) return std::isnan(p[b]);
      return p[a] > p[b];
    });
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = order[j];
      for (int64_t o = 0; o < H; ++o) {
        float acc = 0.0f;
        for (int64_t i = 0; i < H; ++i) acc += wa[e][o][i] * xa[t][i];
        ya[t][o] += p[e] * acc;
      }
    }
  }
  hidden_states.copy_(y);                // the in-place write (fused_experts, inplace=True)
  return hidden_states.clone();          // a fresh tensor, as the fake's empty_like
}

at::Tensor moe_forward_meta(at::Tensor& hidden_states, const at::Tensor& router_logits,
                            const at::Tensor& w, c10::SymInt top_k) {
  moe_checks<SymSized>(hidden_states, router_logits, w, top_k);
  return at::empty_like(hidden_states);
}

// The pre-PR 20152 schema has no (a0!), so the kernels take hidden_states as const& and
// write through it all the same.
at::Tensor moe_forward_pr20152_cpu(const at::Tensor& hidden_states, const at::Tensor& router_logits,
                                   const at::Tensor& w, int64_t top_k) {
  at::Tensor h = hidden_states;
  return moe_experts_inplace(h, router_logits, w, top_k);
}
at::Tensor moe_forward_pr20152_meta(const at::Tensor& hidden_states,
                                    const at::Tensor& router_logits, const at::Tensor& w,
                                    c10::SymInt top_k) {
  moe_checks<SymSized>(hidden_states, router_logits, w, top_k);
  return at::empty_like(hidden_states);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_vllm, m) {
  m.def(
      "moe_forward(Tensor(a0!) hidden_states, Tensor router_logits, Tensor w, SymInt top_k) "
      "-> Tensor");
}
TORCH_LIBRARY_IMPL(opc_vllm, CPU, m) { m.impl("moe_forward", &moe_experts_inplace); }
TORCH_LIBRARY_IMPL(opc_vllm, Meta, m) { m.impl("moe_forward", &moe_forward_meta); }

TORCH_LIBRARY_FRAGMENT(opc_regress, m) {
  m.def(
      "moe_forward_pr20152(Tensor hidden_states, Tensor router_logits, Tensor w, SymInt top_k) "
      "-> Tensor");
}
TORCH_LIBRARY_IMPL(opc_regress, CPU, m) { m.impl("moe_forward_pr20152", &moe_forward_pr20152_cpu); }
TORCH_LIBRARY_IMPL(opc_regress, Meta, m) {
  m.impl("moe_forward_pr20152", &moe_forward_pr20152_meta);
}
