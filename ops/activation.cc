// Port of vLLM _C::silu_and_mul and _C::gelu_and_mul (csrc/activation_kernels.cu,
// act_and_mul_kernel with act_first = true, LAUNCH_ACTIVATION_GATE_KERNEL).
//
//   d = input.size(-1) / 2, num_tokens = input.numel() / input.size(-1); if num_tokens == 0
//   return; for each token t and i < d:
//     out[t*d + i] = (scalar_t)act((float)input[t*2d + i]) * input[t*2d + d + i]
//   with silu(x) = x / (1 + expf(-x)) and gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))) in float,
//   rounded to scalar_t before the multiply (itself rounded), like the kernel.
//   Upstream makes NO checks: rows are indexed densely (token * 2d) whatever the strides,
//   so a strided input or an odd last dim silently reads the wrong elements. Kept.
//
// Deliberate reductions (raised instead of undefined behaviour):
//   - input.size(-1) == 0: upstream divides numel by it on the host (SIGFPE); TORCH_CHECK.
//   - reads or writes outside a tensor's storage (e.g. out too small): TORCH_CHECK.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <cmath>

#include "ops/port_guard.h"
#include "ops/sym_sized.h"

namespace {

using opc::port::guard_span;
using opc::port::SizeOf;
using opc::port::SymSized;

template <typename Int>
struct GateShapeOf {
  Int d;
  Int num_tokens;
};
using GateShape = GateShapeOf<int64_t>;

// T: at::Tensor for the CPU kernel, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
GateShapeOf<SizeOf<T>> gate_shape(const T& input) {
  const auto last = input.size(-1);
  TORCH_CHECK(last != 0,
              "opc port: input.size(-1) == 0; upstream computes numel / size(-1) on the host "
              "(integer division by zero)");
  return {last / 2, input.numel() / last};
}

inline float silu_f(float x) { return x / (1.0f + std::exp(-x)); }
inline float gelu_f(float x) {
  constexpr float kAlpha = static_cast<float>(M_SQRT1_2);
  return x * 0.5f * (1.0f + std::erf(x * kAlpha));
}

template <float (*Act)(float)>
void act_and_mul(at::Tensor& out, const at::Tensor& input) {
  const GateShape s = gate_shape(input);
  if (s.num_tokens == 0) return;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "act_and_mul_kernel", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t* in = input.data_ptr<scalar_t>();
    guard_span(input, 0, s.num_tokens * 2 * s.d - 1, "input");
    guard_span(out, 0, s.num_tokens * s.d - 1, "out");
    for (int64_t t = 0; t < s.num_tokens; ++t) {
      for (int64_t i = 0; i < s.d; ++i) {
        const scalar_t x = in[t * 2 * s.d + i];
        const scalar_t y = in[t * 2 * s.d + s.d + i];
        const scalar_t a = static_cast<scalar_t>(Act(static_cast<float>(x)));
        o[t * s.d + i] = static_cast<scalar_t>(a * y);
      }
    }
  });
}

void silu_and_mul_cpu(at::Tensor& out, const at::Tensor& input) {
  act_and_mul<silu_f>(out, input);
}
void gelu_and_mul_cpu(at::Tensor& out, const at::Tensor& input) {
  act_and_mul<gelu_f>(out, input);
}
void act_and_mul_meta(at::Tensor&, const at::Tensor& input) { gate_shape<SymSized>(input); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C, m) {
  m.def("silu_and_mul(Tensor! result, Tensor input) -> ()");
  m.def("gelu_and_mul(Tensor! out, Tensor input) -> ()");
}
TORCH_LIBRARY_IMPL(opc_C, CPU, m) {
  m.impl("silu_and_mul", &silu_and_mul_cpu);
  m.impl("gelu_and_mul", &gelu_and_mul_cpu);
}
TORCH_LIBRARY_IMPL(opc_C, Meta, m) {
  m.impl("silu_and_mul", &act_and_mul_meta);
  m.impl("gelu_and_mul", &act_and_mul_meta);
}
