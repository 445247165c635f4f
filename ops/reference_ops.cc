// Plain-ATen reference twins of the numeric vLLM ports, registered as opc_ref::<name> with
// the same schema strings. Written independently of the ports' index arithmetic: high-level
// ATen ops (rsqrt, silu, gelu, softmax, topk, ...) computed in float32 and cast once at the
// end, on properly shaped views. They make none of the upstream checks and honour strides,
// so where a port reproduces an upstream quirk (dense row indexing, NaN handling) the two
// are expected to differ; the unit tests compare them only where upstream is well defined.
// Registered for CPU, and for Meta with kernels that do nothing (see NoEffect below).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>

namespace {

void rms_norm_ref(at::Tensor& result, const at::Tensor& input, const at::Tensor& weight,
                  double epsilon) {
  const at::Tensor x = input.to(at::kFloat);
  const at::Tensor inv = at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + epsilon);
  result.copy_(x * inv * weight.to(at::kFloat));
}

void fused_add_rms_norm_ref(at::Tensor& input, at::Tensor& residual, const at::Tensor& weight,
                            double epsilon) {
  // The new residual is stored in the residual's dtype; the norm is taken of what is stored.
  const at::Tensor sum = (input.to(at::kFloat) + residual.to(at::kFloat)).to(residual.scalar_type());
  residual.copy_(sum);
  const at::Tensor x = sum.to(at::kFloat);
  const at::Tensor inv = at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + epsilon);
  input.copy_(x * inv * weight.to(at::kFloat));
}

at::Tensor gate_halves(const at::Tensor& input, bool silu) {
  const int64_t d = input.size(-1) / 2;
  const at::Tensor x = input.narrow(-1, 0, d).to(at::kFloat);
  const at::Tensor y = input.narrow(-1, d, d).to(at::kFloat);
  return (silu ? at::silu(x) : at::gelu(x)) * y;
}

void silu_and_mul_ref(at::Tensor& result, const at::Tensor& input) {
  result.copy_(gate_halves(input, true));
}
void gelu_and_mul_ref(at::Tensor& out, const at::Tensor& input) {
  out.copy_(gate_halves(input, false));
}

// Rotates [tokens, heads, head_size] in float by rows cache[positions].
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, int64_t rot,
                  bool is_neox) {
  at::Tensor out = x.clone();
  const at::Tensor c = cos.unsqueeze(1);  // [tokens, 1, rot/2]
  const at::Tensor s = sin.unsqueeze(1);
  at::Tensor x1, x2;
  if (is_neox) {
    x1 = x.narrow(-1, 0, rot / 2);
    x2 = x.narrow(-1, rot / 2, rot / 2);
    out.narrow(-1, 0, rot / 2).copy_(x1 * c - x2 * s);
    out.narrow(-1, rot / 2, rot / 2).copy_(x2 * c + x1 * s);
  } else {
    const at::Tensor pairs = x.narrow(-1, 0, rot).unflatten(-1, {rot / 2, 2});
    x1 = pairs.select(-1, 0);
    x2 = pairs.select(-1, 1);
    at::Tensor outp = out.narrow(-1, 0, rot).unflatten(-1, {rot / 2, 2});
    outp.select(-1, 0).copy_(x1 * c - x2 * s);
    outp.select(-1, 1).copy_(x2 * c + x1 * s);  // outp is a view of out (a fresh clone)
  }
  return out;
}

void rotary_embedding_ref(const at::Tensor& positions, at::Tensor& query,
                          const std::optional<at::Tensor>& key, int64_t head_size,
                          const at::Tensor& cos_sin_cache, bool is_neox) {
  const at::Tensor pos = positions.reshape({-1});
  const int64_t tokens = pos.numel();
  const int64_t rot = cos_sin_cache.size(1);
  const at::Tensor rows = cos_sin_cache.index_select(0, pos).to(at::kFloat);
  const at::Tensor cos = rows.narrow(1, 0, rot / 2);
  const at::Tensor sin = rows.narrow(1, rot / 2, rot / 2);
  auto apply = [&](at::Tensor& t) {
    const at::Tensor x = t.reshape({tokens, -1, head_size}).to(at::kFloat);
    t.copy_(rotate(x, cos, sin, rot, is_neox).reshape(t.sizes()));
  };
  apply(query);
  if (key.has_value()) {
    at::Tensor k = *key;
    apply(k);
  }
}

constexpr double kFp8Max = 448.0;

void quantise_into(at::Tensor& result, const at::Tensor& input, const at::Tensor& scale) {
  const int64_t n = input.numel();
  const at::Tensor q = (input.to(at::kFloat) / scale.to(at::kFloat).reshape({-1})[0])
                           .clamp(-kFp8Max, kFp8Max)
                           .to(at::kFloat8_e4m3fn);
  result.view({-1}).narrow(0, 0, n).copy_(q.reshape({-1}));
}

void static_scaled_fp8_quant_ref(at::Tensor& result, const at::Tensor& input,
                                 const at::Tensor& scale) {
  if (input.numel() == 0) return;
  quantise_into(result, input, scale);
}

void dynamic_scaled_fp8_quant_ref(at::Tensor& result, const at::Tensor& input, at::Tensor& scale) {
  if (input.numel() == 0) return;
  const at::Tensor amax = input.to(at::kFloat).abs().max();
  scale.copy_(at::maximum(scale, (amax / kFp8Max).reshape(scale.sizes())));
  quantise_into(result, input, scale);
}

void topk_softmax_ref(at::Tensor& topk_weights, at::Tensor& topk_indices,
                      at::Tensor& token_expert_indices, const at::Tensor& gating_output,
                      bool renormalize) {
  const int64_t k = topk_weights.size(-1);
  const at::Tensor probs = at::softmax(gating_output.to(at::kFloat), -1);
  // A stable sort breaks ties towards the lower expert index, as the kernels do.
  auto [sorted, order] = at::sort(probs, /*stable=*/true, -1, /*descending=*/true);
  at::Tensor w = sorted.narrow(-1, 0, k), i = order.narrow(-1, 0, k);
  if (renormalize) w = w / w.sum(-1, /*keepdim=*/true);
  topk_weights.copy_(w);
  topk_indices.copy_(i);
  const int64_t rows = probs.numel() / probs.size(-1);
  const at::Tensor r = at::arange(rows, token_expert_indices.options()).unsqueeze(1);
  const at::Tensor j = at::arange(k, token_expert_indices.options()).unsqueeze(0);
  token_expert_indices.copy_((j * rows + r).view(token_expert_indices.sizes()));
}

// The Meta kernel of a reference op. They return nothing and make no checks of their own,
// so a fake has nothing to predict; the composite code above cannot serve as one, since
// to(), narrow() and reshape() read sizes or the storage offset as ints, which pins or
// refuses the symbolic sizes of torch.compile(dynamic=True).
template <typename Signature>
struct NoEffect;
template <typename... Args>
struct NoEffect<void(Args...)> {
  static void kernel(Args...) {}
};

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_ref, m) {
  m.def("rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()");
  m.def("fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()");
  m.def("silu_and_mul(Tensor! result, Tensor input) -> ()");
  m.def("gelu_and_mul(Tensor! out, Tensor input) -> ()");
  m.def(
      "rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
      "Tensor cos_sin_cache, bool is_neox) -> ()");
  m.def("static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale) -> ()");
  m.def("dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale) -> ()");
  m.def(
      "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! token_expert_indices, "
      "Tensor gating_output, bool renormalize) -> ()");
}

#define OPC_REF_IMPLS(m)                                       \
  m.impl("rms_norm", &rms_norm_ref);                           \
  m.impl("fused_add_rms_norm", &fused_add_rms_norm_ref);       \
  m.impl("silu_and_mul", &silu_and_mul_ref);                   \
  m.impl("gelu_and_mul", &gelu_and_mul_ref);                   \
  m.impl("rotary_embedding", &rotary_embedding_ref);           \
  m.impl("static_scaled_fp8_quant", &static_scaled_fp8_quant_ref); \
  m.impl("dynamic_scaled_fp8_quant", &dynamic_scaled_fp8_quant_ref); \
  m.impl("topk_softmax", &topk_softmax_ref)

TORCH_LIBRARY_IMPL(opc_ref, CPU, m) { OPC_REF_IMPLS(m); }
TORCH_LIBRARY_IMPL(opc_ref, Meta, m) {
  m.impl("rms_norm", &NoEffect<decltype(rms_norm_ref)>::kernel);
  m.impl("fused_add_rms_norm", &NoEffect<decltype(fused_add_rms_norm_ref)>::kernel);
  m.impl("silu_and_mul", &NoEffect<decltype(silu_and_mul_ref)>::kernel);
  m.impl("gelu_and_mul", &NoEffect<decltype(gelu_and_mul_ref)>::kernel);
  m.impl("rotary_embedding", &NoEffect<decltype(rotary_embedding_ref)>::kernel);
  m.impl("static_scaled_fp8_quant", &NoEffect<decltype(static_scaled_fp8_quant_ref)>::kernel);
  m.impl("dynamic_scaled_fp8_quant", &NoEffect<decltype(dynamic_scaled_fp8_quant_ref)>::kernel);
  m.impl("topk_softmax", &NoEffect<decltype(topk_softmax_ref)>::kernel);
}
