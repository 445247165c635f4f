// CUDA kernel of the sequence_parallel_chunk_impl ports (ops/sequence_parallel_chunk.cc):
// this rank's chunk rows are copied from x into a buffer laid out as the composite code
// lays out its padded copy (rows past seq_len are the zero padding), and the chunk is
// returned as a narrow view of it, so sizes, strides and storage offset are the ones the
// Meta kernel predicts. The as-shipped variant returns x's own rows when no padding is
// needed. vLLM calls the op on [num_tokens, hidden]; the kernel refuses other ranks.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "ops/sim_context.h"

namespace {

template <typename T>
__global__ void copy_chunk_rows(const T* x, T* out, int64_t first_row, int64_t seq_len,
                                int64_t hidden, int64_t xs0, int64_t xs1, int64_t os0, int64_t os1) {
  const int64_t row = first_row + blockIdx.x;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
    out[row * os0 + j * os1] = row < seq_len ? x[row * xs0 + j * xs1] : static_cast<T>(0);
}

at::Tensor chunk_cuda(const at::Tensor& x, bool clone_when_divisible) {
  const int64_t tp_size = opc::sim::get_int("tp_size");
  const int64_t tp_rank = opc::sim::get_int("tp_rank");
  TORCH_CHECK(tp_size > 0 && tp_rank >= 0 && tp_rank < tp_size, "bad TP context: rank ",
              tp_rank, " of ", tp_size);
  TORCH_CHECK(x.dim() == 2, "opc port: the CUDA kernel takes [num_tokens, hidden], not ", x.sizes());
  const int64_t seq_len = x.size(0), hidden = x.size(1);
  const int64_t remainder = seq_len % tp_size;
  const int64_t padded_len = remainder ? seq_len + tp_size - remainder : seq_len;
  const int64_t chunk = padded_len / tp_size;
  if (!remainder && !clone_when_divisible) return x.narrow(0, tp_rank * chunk, chunk);
  // F.pad makes a contiguous tensor; clone keeps x's dense layout.
  at::Tensor padded = remainder ? at::empty({padded_len, hidden}, x.options()) : at::empty_like(x);
  if (chunk > 0 && hidden > 0) {
    const c10::cuda::CUDAGuard device(x.device());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "sequence_parallel_chunk", [&] {
      copy_chunk_rows<scalar_t><<<chunk, 128, 0, c10::cuda::getCurrentCUDAStream()>>>(
          x.data_ptr<scalar_t>(), padded.data_ptr<scalar_t>(), tp_rank * chunk, seq_len, hidden,
          x.stride(0), x.stride(1), padded.stride(0), padded.stride(1));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return padded.narrow(0, tp_rank * chunk, chunk);
}

at::Tensor sequence_parallel_chunk_impl_cuda(const at::Tensor& x) { return chunk_cuda(x, true); }
at::Tensor sequence_parallel_chunk_impl_pr44130_cuda(const at::Tensor& x) { return chunk_cuda(x, false); }

}  // namespace

TORCH_LIBRARY_IMPL(opc_vllm, CUDA, m) {
  m.impl("sequence_parallel_chunk_impl", &sequence_parallel_chunk_impl_cuda);
}
TORCH_LIBRARY_IMPL(opc_regress, CUDA, m) {
  m.impl("sequence_parallel_chunk_impl_pr44130", &sequence_parallel_chunk_impl_pr44130_cuda);
}
