// Port of vLLM _C::weak_ref_tensor (csrc/ops.h, torch_bindings.cpp; used by
// vllm/utils/torch_utils.py weak_ref_tensor for the outputs of captured CUDA graphs):
//
//   weak_ref_tensor(Tensor input) -> Tensor
//
// Returns a tensor over input's memory that does not own it: at::from_blob on
// input.data_ptr() with input's sizes and strides and no deleter, so nothing keeps the
// storage alive. The schema carries no alias annotation, on purpose: this is the negative
// control, a return that aliases its input without saying so, which a checker must flag.
//
//   opc_C::weak_ref_tensor  CPU: exactly that (a new storage object, same bytes, storage
//                           offset 0 at input's data_ptr); Meta: what from_blob yields,
//                           described without data -- a tensor of its own storage, storage
//                           offset 0, input's sizes and strides (at::empty_strided). (A
//                           Meta returning input.alias() would claim the alias the schema
//                           denies and mispredict the storage offset of a narrowed input.)
// Upstream's only check is input.is_cuda() (std::runtime_error "Tensor must be on CUDA
// device"); the CPU kernel drops it, since CPU is what it runs on here. No regression
// variant: the op itself is the defect.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor weak_ref_tensor_cpu(const at::Tensor& input) {
  return at::from_blob(input.data_ptr(), input.sizes(), input.strides(), input.options());
}

at::Tensor weak_ref_tensor_meta(const at::Tensor& input) {
  return at::empty_strided_symint(input.sym_sizes(), input.sym_strides(), input.options());
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C, m) { m.def("weak_ref_tensor(Tensor input) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_C, CPU, m) { m.impl("weak_ref_tensor", &weak_ref_tensor_cpu); }
TORCH_LIBRARY_IMPL(opc_C, Meta, m) { m.impl("weak_ref_tensor", &weak_ref_tensor_meta); }
