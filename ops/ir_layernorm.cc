// Port of vLLM IR's fused_add_rms_norm and its maybe_inplace overload (vllm/ir/op.py:
// register_op / IrOp / IrOpInplaceOverload / IrOpImpl.safe_impl_fn; vllm/ir/ops/layernorm.py:
// the native implementation; vllm/kernels/... register_impl("vllm_c", inplace=True)).
//
// What upstream does:
//   @register_op(allow_inplace=True)
//   def fused_add_rms_norm(x, x_residual, weight: Tensor | None, epsilon: float,
//                          variance_size: int | None = None) -> tuple[Tensor, Tensor]
//   IrOp defines torch.ops.vllm_ir.fused_add_rms_norm.default with
//   infer_schema(native, mutates_args=[]), and IrOpInplaceOverload defines
//   torch.ops.vllm_ir.fused_add_rms_norm.maybe_inplace with
//   infer_schema(native, mutates_args=activations), the activations being the parameters
//   whose names start with "x" -- x and x_residual. The schemas (torch.library.infer_schema):
//
//     fused_add_rms_norm(Tensor x, Tensor x_residual, Tensor? weight, float epsilon,
//         SymInt? variance_size=None) -> (Tensor, Tensor)
//     fused_add_rms_norm.maybe_inplace(Tensor(a0!) x, Tensor(a1!) x_residual, Tensor? weight,
//         float epsilon, SymInt? variance_size=None) -> (Tensor, Tensor)
//
//   Note the maybe_inplace returns carry no alias annotation although in-place providers
//   (vllm_c, xpu_kernels, oink: register_impl(..., inplace=True)) write x and x_residual
//   and `return x, x_residual`. The default overload must be functional: its CPU/CUDA
//   kernel (_inner_call) runs the chosen provider through safe_impl_fn, which clones every
//   activation first when the provider is in place. maybe_inplace runs impl_fn directly
//   (the caller donates x and x_residual; using them afterwards is an error that vLLM's
//   inplace functionalization pass reports). Both fakes are the native function (the
//   maybe_inplace fake "goes to default overload for now"): fresh tensors.
//   Native math (current tree):
//     z = x.float() + x_residual.float(); residual_out = z.to(x.dtype)
//     var = mean(z[..., :variance_size or all]^2, -1); y = z * rsqrt(var + epsilon)
//     if weight is not None: y = y.to(weight.dtype) * weight
//     return y.to(x.dtype), residual_out
//
// Registered under opc_vllm_ir (same schemas):
//   fused_add_rms_norm              functional: the native math, new tensors, writes nothing.
//   fused_add_rms_norm.maybe_inplace  the in-place provider path: native math, then
//       x.copy_(out), x_residual.copy_(residual) and returns (x, x_residual) themselves (as
//       the vllm_c provider's fallback branch does for non-contiguous inputs on ROCm).
//   Meta of both: the tensors the native math makes (fresh), as upstream's fakes.
// Regression (opc_regress, same schemas):
//   ir_fused_add_rms_norm_writes_input       a default overload that runs the in-place
//       provider without safe_impl_fn's clones: writes x and x_residual and returns them --
//       the bug the donation clause exists for.
//   ir_fused_add_rms_norm_writes_input.maybe_inplace   as opc_vllm_ir's.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using Pair = std::tuple<at::Tensor, at::Tensor>;

Pair native(const at::Tensor& x, const at::Tensor& x_residual,
            const std::optional<at::Tensor>& weight, double epsilon,
            std::optional<int64_t> variance_size) {
  const auto orig = x.scalar_type();
  const at::Tensor z = x.to(at::kFloat) + x_residual.to(at::kFloat);
  const at::Tensor residual_out = z.to(orig);
  at::Tensor z_var = z;
  if (variance_size) {
    TORCH_CHECK(z.dim() >= 1, "opc port: x must have a last dimension");
    // Python's x[..., :variance_size]: clamped, negative counts from the end.
    const int64_t last = z.size(-1);
    int64_t stop = *variance_size < 0 ? std::max<int64_t>(last + *variance_size, 0)
                                      : std::min<int64_t>(*variance_size, last);
    z_var = z.narrow(-1, 0, stop);
  }
  const at::Tensor variance = z_var.pow(2).mean(-1, /*keepdim=*/true);
  at::Tensor y = z * at::rsqrt(variance + epsilon);
  if (weight && weight->defined()) y = y.to(weight->scalar_type()) * *weight;
  return {y.to(orig), residual_out};
}

Pair functional(const at::Tensor& x, const at::Tensor& x_residual,
                const std::optional<at::Tensor>& weight, double epsilon,
                std::optional<int64_t> variance_size) {
  return native(x, x_residual, weight, epsilon, variance_size);
}

Pair in_place(at::Tensor& x, at::Tensor& x_residual, const std::optional<at::Tensor>& weight,
              double epsilon, std::optional<int64_t> variance_size) {
  auto [out, residual] = native(x, x_residual, weight, epsilon, variance_size);
  x.copy_(out);
  x_residual.copy_(residual);
  return {x, x_residual};
}

// The bug: the default overload (non-mutating schema) calling the in-place provider's
// impl_fn directly instead of safe_impl_fn.
Pair writes_input(const at::Tensor& x, const at::Tensor& x_residual,
                  const std::optional<at::Tensor>& weight, double epsilon,
                  std::optional<int64_t> variance_size) {
  at::Tensor xm = x, rm = x_residual;
  return in_place(xm, rm, weight, epsilon, variance_size);
}

// native's returns without their values, on meta tensors whose sizes may be symbolic.
// Several of ATen's meta paths fail on such sizes, so native_meta goes around them: to()
// copies through _to_copy, which reads sizes as ints (meta_to allocates the copy it would
// make); a binary op broadcasts its operands with expand, which does too (meta_broadcast
// expands them first, as strided views); and a binary op on float16/bfloat16 converts its
// operands through Python, out of reach of a C++ kernel run by FakeTensorMode, so every
// intermediate stays float32 -- the layouts are the same, and the returns get their dtypes
// last. The variance is [..., 1] whatever variance_size selects, so it is taken over all of
// z; only native's check on variance_size remains.
at::Tensor meta_to(const at::Tensor& t, at::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : at::empty_like(t, t.options().dtype(dtype));
}

// a and b as the views expand gives them on their broadcast shape: stride 0 along the dims
// they are broadcast in.
std::pair<at::Tensor, at::Tensor> meta_broadcast(const at::Tensor& a, const at::Tensor& b) {
  const c10::SymDimVector shape = at::infer_size_symdimvector(a.sym_sizes(), b.sym_sizes());
  auto expand = [&](const at::Tensor& t) {
    const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
    std::vector<c10::SymInt> strides(shape.size(), 0);
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.sym_size(d) == shape[lead + d]) strides[lead + d] = t.sym_stride(d);
    return t.as_strided_symint(shape, strides, t.sym_storage_offset());
  };
  return {expand(a), expand(b)};
}

Pair native_meta(const at::Tensor& x, const at::Tensor& x_residual,
                 const std::optional<at::Tensor>& weight, double epsilon,
                 const std::optional<c10::SymInt>& variance_size) {
  const auto orig = x.scalar_type();
  const auto [xf, rf] = meta_broadcast(meta_to(x, at::kFloat), meta_to(x_residual, at::kFloat));
  const at::Tensor z = xf + rf;
  const at::Tensor residual_out = meta_to(z, orig);
  if (variance_size) TORCH_CHECK(z.dim() >= 1, "opc port: x must have a last dimension");
  const at::Tensor variance = z.pow(2).mean(-1, /*keepdim=*/true);
  const auto [zb, inv] = meta_broadcast(z, at::rsqrt(variance + epsilon));
  at::Tensor y = zb * inv;
  if (weight && weight->defined()) {
    const auto [yw, w] = meta_broadcast(y, meta_to(*weight, at::kFloat));
    y = yw * w;
  }
  return {meta_to(y, orig), residual_out};
}

Pair functional_meta(const at::Tensor& x, const at::Tensor& x_residual,
                     const std::optional<at::Tensor>& weight, double epsilon,
                     std::optional<c10::SymInt> variance_size) {
  return native_meta(x, x_residual, weight, epsilon, variance_size);
}

Pair in_place_meta(at::Tensor& x, at::Tensor& x_residual, const std::optional<at::Tensor>& weight,
                   double epsilon, std::optional<c10::SymInt> variance_size) {
  return native_meta(x, x_residual, weight, epsilon, variance_size);
}

}  // namespace

#define OPC_IR_ARGS                                                  \
  "(Tensor x, Tensor x_residual, Tensor? weight, float epsilon, " \
  "SymInt? variance_size=None) -> (Tensor, Tensor)"
#define OPC_IR_INPLACE_ARGS                                                    \
  "(Tensor(a0!) x, Tensor(a1!) x_residual, Tensor? weight, float epsilon, " \
  "SymInt? variance_size=None) -> (Tensor, Tensor)"

TORCH_LIBRARY_FRAGMENT(opc_vllm_ir, m) {
  m.def("fused_add_rms_norm" OPC_IR_ARGS);
  m.def("fused_add_rms_norm.maybe_inplace" OPC_IR_INPLACE_ARGS);
}
TORCH_LIBRARY_IMPL(opc_vllm_ir, CPU, m) {
  m.impl("fused_add_rms_norm", &functional);
  m.impl("fused_add_rms_norm.maybe_inplace", &in_place);
}
TORCH_LIBRARY_IMPL(opc_vllm_ir, Meta, m) {
  m.impl("fused_add_rms_norm", &functional_meta);
  m.impl("fused_add_rms_norm.maybe_inplace", &in_place_meta);
}

TORCH_LIBRARY_FRAGMENT(opc_regress, m) {
  m.def("ir_fused_add_rms_norm_writes_input" OPC_IR_ARGS);
  m.def("ir_fused_add_rms_norm_writes_input.maybe_inplace" OPC_IR_INPLACE_ARGS);
}
TORCH_LIBRARY_IMPL(opc_regress, CPU, m) {
  m.impl("ir_fused_add_rms_norm_writes_input", &writes_input);
  m.impl("ir_fused_add_rms_norm_writes_input.maybe_inplace", &in_place);
}
// The fakes are upstream's: the native function, fresh tensors.
TORCH_LIBRARY_IMPL(opc_regress, Meta, m) {
  m.impl("ir_fused_add_rms_norm_writes_input", &functional_meta);
  m.impl("ir_fused_add_rms_norm_writes_input.maybe_inplace", &in_place_meta);
}
