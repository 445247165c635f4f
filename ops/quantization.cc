// Port of vLLM _C::static_scaled_fp8_quant and _C::dynamic_scaled_fp8_quant
// (csrc/quantization/fp8/common.cu + common.cuh, the version that checks input and out
// contiguous, works on flat element indices, and leaves initialising scale to the caller).
//
//   Both: TORCH_CHECK(input.is_contiguous()), TORCH_CHECK(out.is_contiguous());
//   num_tokens = input.numel() / input.size(-1) is the grid: 0 launches nothing (scale is
//   neither read nor written). Only the first input.numel() elements of out are written, so
//   padded rows of a larger out (num_token_padding) are never touched.
//   Element i: out[i] = fp8_e4m3fn(fmax(-448, fmin(input[i] * (1 / scale[0]), 448))) --
//   multiplication by the reciprocal, and fmin/fmax drop NaN, so a NaN input becomes 448.
//   dynamic: segmented_max_reduction first folds m = max|input| / 448 into scale[0] with
//   atomicMaxFloat, i.e. a read-modify-write: for m >= 0 an integer max of the float bit
//   patterns (so a negative initial scale is overwritten, a larger or NaN one survives);
//   the per-thread maxima use fmaxf, which ignores NaN inputs. Then it quantises with the
//   resulting scale[0].
//   out must be Float8_e4m3fn (upstream's fp8 dispatch), scale float32, input fp32/fp16/bf16.
//
// Deliberate reductions: input.size(-1) == 0 (host integer division by zero upstream) and an
// out too small for input.numel() elements (out-of-bounds write upstream) raise.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <c10/util/Float8_e4m3fn.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/port_guard.h"
#include "ops/sym_sized.h"

namespace {

constexpr float kFp8Max = 448.0f;

using opc::port::guard_span;
using opc::port::SizeOf;
using opc::port::SymSized;

// T: at::Tensor for the CPU kernels, SymSized for the Meta ones (ops/sym_sized.h).
template <typename T>
SizeOf<T> quant_checks(const T& out, const T& input) {
  TORCH_CHECK(input.is_contiguous());
  TORCH_CHECK(out.is_contiguous());
  const auto last = input.size(-1);
  TORCH_CHECK(last != 0,
              "opc port: input.size(-1) == 0; upstream computes numel / size(-1) on the host "
              "(integer division by zero)");
  return input.numel() / last;  // num_tokens: the grid size
}

void check_fp8_out(const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kFloat8_e4m3fn,
              "\"scaled_fp8_quant_kernel_fp8_type\" not implemented for '", out.scalar_type(), "'");
}

inline c10::Float8_e4m3fn scaled_fp8(float val, float inverted_scale) {
  const float x = val * inverted_scale;
  const float r = std::fmax(-kFp8Max, std::fmin(x, kFp8Max));
  return static_cast<c10::Float8_e4m3fn>(r);
}

template <typename scalar_t>
void quantise(c10::Float8_e4m3fn* out, const scalar_t* in, float scale, int64_t n) {
  const float inv = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) out[i] = scaled_fp8(static_cast<float>(in[i]), inv);
}

// atomicMaxFloat(addr, value) for value >= 0: atomicMax on the int bit patterns.
inline void atomic_max_float(float* addr, float value) {
  if (value >= 0) {
    int32_t old_bits, new_bits;
    std::memcpy(&old_bits, addr, 4);
    std::memcpy(&new_bits, &value, 4);
    const int32_t m = old_bits > new_bits ? old_bits : new_bits;
    std::memcpy(addr, &m, 4);
  } else {
    uint32_t old_bits, new_bits;
    std::memcpy(&old_bits, addr, 4);
    std::memcpy(&new_bits, &value, 4);
    const uint32_t m = old_bits < new_bits ? old_bits : new_bits;
    std::memcpy(addr, &m, 4);
  }
}

void static_scaled_fp8_quant_cpu(at::Tensor& out, const at::Tensor& input,
                                 const at::Tensor& scale) {
  const int64_t num_tokens = quant_checks(out, input);
  const int64_t n = input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(),
                                  "scaled_fp8_quant_kernel_scalar_type", [&] {
    check_fp8_out(out);
    auto* o = out.data_ptr<c10::Float8_e4m3fn>();
    const scalar_t* in = input.data_ptr<scalar_t>();
    const float* sc = scale.data_ptr<float>();
    if (num_tokens == 0) return;  // empty grid
    guard_span(out, 0, n - 1, "out");
    guard_span(scale, 0, 0, "scale");
    quantise(o, in, *sc, n);
  });
}

void dynamic_scaled_fp8_quant_cpu(at::Tensor& out, const at::Tensor& input, at::Tensor& scale) {
  const int64_t num_tokens = quant_checks(out, input);
  const int64_t n = input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(),
                                  "scaled_fp8_quant_kernel_scalar_type", [&] {
    check_fp8_out(out);
    auto* o = out.data_ptr<c10::Float8_e4m3fn>();
    const scalar_t* in = input.data_ptr<scalar_t>();
    float* sc = scale.data_ptr<float>();
    if (num_tokens == 0) return;  // empty grid: scale untouched
    guard_span(out, 0, n - 1, "out");
    guard_span(scale, 0, 0, "scale");
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(static_cast<float>(in[i])));
    atomic_max_float(sc, amax / kFp8Max);
    quantise(o, in, *sc, n);
  });
}

void static_quant_meta(at::Tensor& out, const at::Tensor& input, const at::Tensor&) {
  quant_checks<SymSized>(out, input);
  check_fp8_out(out);
}
void dynamic_quant_meta(at::Tensor& out, const at::Tensor& input, at::Tensor&) {
  quant_checks<SymSized>(out, input);
  check_fp8_out(out);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C, m) {
  m.def("static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale) -> ()");
  m.def("dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale) -> ()");
}
TORCH_LIBRARY_IMPL(opc_C, CPU, m) {
  m.impl("static_scaled_fp8_quant", &static_scaled_fp8_quant_cpu);
  m.impl("dynamic_scaled_fp8_quant", &dynamic_scaled_fp8_quant_cpu);
}
TORCH_LIBRARY_IMPL(opc_C, Meta, m) {
  m.impl("static_scaled_fp8_quant", &static_quant_meta);
  m.impl("dynamic_scaled_fp8_quant", &dynamic_quant_meta);
}
