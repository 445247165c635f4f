// Ops that take x as [tokens, heads * head_size] or [tokens, heads, head_size] (as vLLM's
// rotary embedding takes query), for the forms clause:
//
//   center_heads            subtracts each head's mean: the head size comes from its
//                           argument, so both forms give the same bytes
//   center_heads_last_dim   takes the head size from x's last dim: right for the 3-D form,
//                           whole rows centred for the 2-D one
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor centered(const at::Tensor& x, int64_t head_size) {
  const at::Tensor heads = x.reshape({x.size(0), -1, head_size});
  return (heads - heads.mean(-1, /*keepdim=*/true)).reshape(x.sizes());
}

at::Tensor center_heads(const at::Tensor& x, int64_t head_size) { return centered(x, head_size); }

at::Tensor center_heads_last_dim(const at::Tensor& x, int64_t /*head_size*/) { return centered(x, x.size(-1)); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("center_heads(Tensor x, int head_size) -> Tensor");
  m.def("center_heads_last_dim(Tensor x, int head_size) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("center_heads", &center_heads);
  m.impl("center_heads_last_dim", &center_heads_last_dim);
}
