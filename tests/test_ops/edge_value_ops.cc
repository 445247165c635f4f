// Ops that only edge values break, each with a twin that handles them: the finite clause
// (with `finite: true`) catches the first kind and passes the second.
//
//   rows_over_max       x / max|row|: an all-zero row divides 0 by 0 (NaN); the twin leaves
//                       a zero row zero
//   row_norm_fp16_sum   sqrt(sum x^2) accumulated in x's float16: one value near 60000
//                       overflows the sum to infinity; the twin accumulates in float32
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor rows_over_max(const at::Tensor& x) { return x / x.abs().amax(-1, /*keepdim=*/true); }

at::Tensor rows_over_max_safe(const at::Tensor& x) {
  const at::Tensor m = x.abs().amax(-1, /*keepdim=*/true);
  return x / at::where(m == 0, at::ones_like(m), m);
}

at::Tensor row_norm_fp16_sum(const at::Tensor& x) { return (x * x).sum(-1).sqrt(); }

at::Tensor row_norm_fp32_sum(const at::Tensor& x) {
  return (x.to(at::kFloat) * x.to(at::kFloat)).sum(-1).sqrt().to(x.scalar_type());
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("rows_over_max(Tensor x) -> Tensor");
  m.def("rows_over_max_safe(Tensor x) -> Tensor");
  m.def("row_norm_fp16_sum(Tensor x) -> Tensor");
  m.def("row_norm_fp32_sum(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("rows_over_max", &rows_over_max);
  m.impl("rows_over_max_safe", &rows_over_max_safe);
  m.impl("row_norm_fp16_sum", &row_norm_fp16_sum);
  m.impl("row_norm_fp32_sum", &row_norm_fp32_sum);
}
