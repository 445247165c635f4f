// CUDA kernels of the _C::silu_and_mul and _C::gelu_and_mul ports (ops/activation.cc states
// the semantics): one block per token, threads striding over i < d, and the same index
// arithmetic as upstream's act_and_mul_kernel and the CPU port --
//   out[t*d + i] = (scalar_t)act((float)input[t*2d + i]) * input[t*2d + d + i]
// rows indexed densely whatever input's strides (upstream checks nothing; neither do we),
// d = input.size(-1) / 2 (an odd last dim drops its last column), num_tokens 0 launches
// nothing. The host-side steps are the CPU port's: the size(-1) == 0 refusal (upstream's
// host division by zero) and the opc::port storage guards on input and out.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "ops/port_guard.h"

namespace {

struct SiluF {
  __device__ float operator()(float x) const { return x / (1.0f + expf(-x)); }
};
struct GeluF {
  __device__ float operator()(float x) const {
    constexpr float kAlpha = 0.70710678118654752440f;  // M_SQRT1_2
    return x * 0.5f * (1.0f + erff(x * kAlpha));
  }
};

template <typename T, typename Act>
__global__ void act_and_mul_kernel(T* out, const T* input, int64_t d) {
  const int64_t t = blockIdx.x;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    const T x = input[t * 2 * d + i];
    const T y = input[t * 2 * d + d + i];
    const T a = static_cast<T>(Act()(static_cast<float>(x)));
    out[t * d + i] = static_cast<T>(a * y);
  }
}

template <typename Act>
void act_and_mul_cuda(at::Tensor& out, const at::Tensor& input) {
  const int64_t last = input.size(-1);
  TORCH_CHECK(last != 0,
              "opc port: input.size(-1) == 0; upstream computes numel / size(-1) on the host "
              "(integer division by zero)");
  const int64_t d = last / 2;
  const int64_t num_tokens = input.numel() / last;
  if (num_tokens == 0) return;
  const c10::cuda::CUDAGuard device(input.device());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "act_and_mul_kernel", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t* in = input.data_ptr<scalar_t>();
    opc::port::guard_span(input, 0, num_tokens * 2 * d - 1, "input");
    opc::port::guard_span(out, 0, num_tokens * d - 1, "out");
    if (d == 0) return;  // empty blocks
    const int threads = static_cast<int>(std::min<int64_t>(d, 1024));
    act_and_mul_kernel<scalar_t, Act>
        <<<num_tokens, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(o, in, d);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void silu_and_mul_cuda(at::Tensor& out, const at::Tensor& input) {
  act_and_mul_cuda<SiluF>(out, input);
}
void gelu_and_mul_cuda(at::Tensor& out, const at::Tensor& input) {
  act_and_mul_cuda<GeluF>(out, input);
}

}  // namespace

TORCH_LIBRARY_IMPL(opc_C, CUDA, m) {
  m.impl("silu_and_mul", &silu_and_mul_cuda);
  m.impl("gelu_and_mul", &gelu_and_mul_cuda);
}
