// CUDA kernels of the _C::rms_norm and _C::fused_add_rms_norm ports (ops/layernorm.cc
// states the semantics and the checks upstream makes): one block per token, the sum of
// squares reduced in float in shared memory, the row scaled, rounded to the dtype, then
// multiplied by the weight in the dtype. Both fused_add_rms_norm branches use the scalar
// kernel here: upstream's width-8 path differs in load width, not in arithmetic.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

namespace {

constexpr int kThreads = 256;

// Sum over the block of each thread's `v`; every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads];
  __shared__ float total;
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) total = partial[0];
  __syncthreads();
  return total;
}

template <typename T>
__global__ void rms_norm_kernel(T* out, const T* in, const T* weight, float eps, int64_t in_stride,
                                int hidden) {
  const T* row = in + blockIdx.x * in_stride;
  float sq = 0.f;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const float x = static_cast<float>(row[i]);
    sq += x * x;
  }
  const float inv_rms = rsqrtf(block_sum(sq) / hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += kThreads)
    out[blockIdx.x * static_cast<int64_t>(hidden) + i] =
        static_cast<T>(static_cast<float>(row[i]) * inv_rms) * weight[i];
}

template <typename T>
__global__ void fused_add_rms_norm_kernel(T* input, T* residual, const T* weight, float eps,
                                          int64_t in_stride, int hidden) {
  T* in_row = input + blockIdx.x * in_stride;
  T* res_row = residual + blockIdx.x * static_cast<int64_t>(hidden);
  float sq = 0.f;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const T z = in_row[i] + res_row[i];
    res_row[i] = z;
    const float zf = static_cast<float>(z);
    sq += zf * zf;
  }
  const float inv_rms = rsqrtf(block_sum(sq) / hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += kThreads)
    in_row[i] = static_cast<T>(static_cast<float>(res_row[i]) * inv_rms) * weight[i];
}

void rms_norm_cuda(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps) {
  TORCH_CHECK(out.is_contiguous());
  TORCH_CHECK(input.stride(-1) == 1);
  TORCH_CHECK(weight.is_contiguous());
  const int64_t hidden = input.size(-1);
  TORCH_CHECK(hidden != 0, "opc port: hidden_size 0 (upstream divides by it on the host)");
  const int64_t tokens = input.numel() / hidden;
  TORCH_CHECK(out.numel() >= tokens * hidden && weight.numel() >= hidden,
              "opc port: result or weight smaller than the kernel writes or reads");
  if (tokens == 0) return;
  const c10::cuda::CUDAGuard device(input.device());
  const int64_t in_stride = input.dim() > 1 ? input.stride(-2) : hidden;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "rms_norm", [&] {
    rms_norm_kernel<scalar_t><<<tokens, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
        static_cast<float>(eps), in_stride, static_cast<int>(hidden));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void fused_add_rms_norm_cuda(at::Tensor& input, at::Tensor& residual, const at::Tensor& weight,
                             double eps) {
  TORCH_CHECK(residual.is_contiguous());
  TORCH_CHECK(weight.is_contiguous());
  const int64_t hidden = input.size(-1);
  TORCH_CHECK(hidden != 0, "opc port: hidden_size 0 (upstream divides by it on the host)");
  const int64_t tokens = input.numel() / hidden;
  TORCH_CHECK(residual.numel() >= tokens * hidden && weight.numel() >= hidden,
              "opc port: residual or weight smaller than the kernel writes or reads");
  if (tokens == 0) return;
  const c10::cuda::CUDAGuard device(input.device());
  const int64_t in_stride = input.dim() > 1 ? input.stride(-2) : hidden;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "fused_add_rms_norm", [&] {
    fused_add_rms_norm_kernel<scalar_t><<<tokens, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<scalar_t>(), residual.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
        static_cast<float>(eps), in_stride, static_cast<int>(hidden));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

TORCH_LIBRARY_IMPL(opc_C, CUDA, m) {
  m.impl("rms_norm", &rms_norm_cuda);
  m.impl("fused_add_rms_norm", &fused_add_rms_norm_cuda);
}
