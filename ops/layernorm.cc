// Port of vLLM _C::rms_norm and _C::fused_add_rms_norm (csrc/layernorm_kernels.cu, the
// version with one-block-per-token kernels, input row stride taken from stride(-2), and a
// width-8 vectorised fused_add_rms_norm for fp16/bf16; csrc/type_convert.cuh for _f16Vec).
//
//   rms_norm(result, input, weight, eps):
//     result[t*H + i] = (scalar_t)(x * rsqrt(sum_i x^2 / H + eps)) * weight[i],
//     x = input[t*stride(-2) + i]; upstream checks result contiguous, input.stride(-1) == 1,
//     weight contiguous -- nothing else (no shape or dtype agreement beyond data_ptr<T>).
//   fused_add_rms_norm(input, residual, weight, eps):
//     residual[t*H + i] = z = input[t*stride(-2) + i] + residual[t*H + i]   (rounded to T)
//     input[t*stride(-2) + i] = (scalar_t)(z * rsqrt(sum z^2 / H + eps)) * weight[i]
//     upstream checks residual contiguous and weight contiguous only (NOT input.stride(-1)).
//     Two kernels, chosen by the host exactly like upstream: the width-8 vectorised one when
//     input/residual/weight data pointers are 16-byte aligned and H % 8 == 0 and
//     stride(-2) % 8 == 0, for fp16/bf16 (float32 has no vector specialisation in this
//     version and falls back to the scalar kernel); otherwise the scalar kernel.
//
// Deliberate reductions (not upstream checks, raised instead of undefined behaviour):
//   - hidden_size 0: upstream divides numel by it on the host (SIGFPE); we TORCH_CHECK.
//   - an access outside a tensor's storage (e.g. result smaller than input): upstream reads
//     or writes out of bounds; we TORCH_CHECK with an "opc port:" message.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>

#include "ops/port_guard.h"
#include "ops/sym_sized.h"

namespace {

using opc::port::guard_span;
using opc::port::SizeOf;
using opc::port::SymSized;

template <typename Int>
struct RowShapeOf {
  Int hidden;
  Int num_tokens;
  Int input_stride;
};
using RowShape = RowShapeOf<int64_t>;

// The checks take T = at::Tensor in the CPU kernels, SymSized in the Meta ones
// (ops/sym_sized.h).
template <typename T>
RowShapeOf<SizeOf<T>> row_shape(const T& input) {
  const auto hidden = input.size(-1);
  TORCH_CHECK(hidden != 0,
              "opc port: hidden_size 0; upstream computes numel / hidden_size on the host "
              "(integer division by zero)");
  // input.stride(-2) throws for a 1-D input, as upstream's does.
  return {hidden, input.numel() / hidden, input.stride(-2)};
}

template <typename T>
RowShapeOf<SizeOf<T>> rms_norm_checks(const T& out, const T& input, const T& weight) {
  TORCH_CHECK(out.is_contiguous());
  TORCH_CHECK(input.stride(-1) == 1);
  TORCH_CHECK(weight.is_contiguous());
  return row_shape(input);
}

template <typename T>
RowShapeOf<SizeOf<T>> fused_add_checks(const T& input, const T& residual, const T& weight) {
  TORCH_CHECK(residual.is_contiguous());
  TORCH_CHECK(weight.is_contiguous());
  return row_shape(input);
}

void rms_norm_cpu(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight,
                  double epsilon) {
  const RowShape s = rms_norm_checks(out, input, weight);
  const float eps = static_cast<float>(epsilon);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "rms_norm", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t* in = input.data_ptr<scalar_t>();
    const scalar_t* w = weight.data_ptr<scalar_t>();
    if (s.num_tokens == 0) return;
    guard_span(input, 0, (s.num_tokens - 1) * s.input_stride + s.hidden - 1, "input");
    guard_span(out, 0, s.num_tokens * s.hidden - 1, "result");
    guard_span(weight, 0, s.hidden - 1, "weight");
    for (int64_t t = 0; t < s.num_tokens; ++t) {
      const scalar_t* row = in + t * s.input_stride;
      float variance = 0.0f;
      for (int64_t i = 0; i < s.hidden; ++i) {
        const float x = static_cast<float>(row[i]);
        variance += x * x;
      }
      const float inv = 1.0f / std::sqrt(variance / static_cast<float>(s.hidden) + eps);
      for (int64_t i = 0; i < s.hidden; ++i) {
        const float x = static_cast<float>(row[i]);
        o[t * s.hidden + i] = static_cast<scalar_t>(static_cast<scalar_t>(x * inv) * w[i]);
      }
    }
  });
}

// Upstream's generic kernel: element by element, z rounded to scalar_t before squaring.
template <typename scalar_t>
void fused_add_scalar(scalar_t* in, scalar_t* res, const scalar_t* w, const RowShape& s,
                      float eps) {
  for (int64_t t = 0; t < s.num_tokens; ++t) {
    float variance = 0.0f;
    for (int64_t i = 0; i < s.hidden; ++i) {
      scalar_t z = in[t * s.input_stride + i];
      z = static_cast<scalar_t>(z + res[t * s.hidden + i]);
      const float x = static_cast<float>(z);
      variance += x * x;
      res[t * s.hidden + i] = z;
    }
    const float inv = 1.0f / std::sqrt(variance / static_cast<float>(s.hidden) + eps);
    for (int64_t i = 0; i < s.hidden; ++i) {
      const float x = static_cast<float>(res[t * s.hidden + i]);
      in[t * s.input_stride + i] = static_cast<scalar_t>(static_cast<scalar_t>(x * inv) * w[i]);
    }
  }
}

// Upstream's width-8 kernel (_f16Vec<scalar_t, 8>): packed adds, sum_squares summed pairwise
// per vector, then scale (rounded) and multiply by the weight vector (rounded).
template <typename scalar_t>
void fused_add_vec8(scalar_t* in, scalar_t* res, const scalar_t* w, const RowShape& s, float eps) {
  constexpr int kWidth = 8;
  const int64_t vec_hidden = s.hidden / kWidth;
  const int64_t vec_stride = s.input_stride / kWidth;
  for (int64_t t = 0; t < s.num_tokens; ++t) {
    float variance = 0.0f;
    for (int64_t v = 0; v < vec_hidden; ++v) {
      scalar_t* src = in + (t * vec_stride + v) * kWidth;
      scalar_t* r = res + (t * vec_hidden + v) * kWidth;
      scalar_t temp[kWidth];
      float sum_sq = 0.0f;
      for (int j = 0; j < kWidth; ++j) temp[j] = static_cast<scalar_t>(src[j] + r[j]);
      for (int j = 0; j < kWidth; j += 2) {
        const float a = static_cast<float>(temp[j]);
        const float b = static_cast<float>(temp[j + 1]);
        sum_sq += a * a + b * b;
      }
      variance += sum_sq;
      for (int j = 0; j < kWidth; ++j) r[j] = temp[j];
    }
    const float inv = 1.0f / std::sqrt(variance / static_cast<float>(s.hidden) + eps);
    for (int64_t v = 0; v < vec_hidden; ++v) {
      scalar_t* dst = in + (t * vec_stride + v) * kWidth;
      const scalar_t* r = res + (t * vec_hidden + v) * kWidth;
      const scalar_t* wv = w + v * kWidth;
      for (int j = 0; j < kWidth; ++j) {
        const scalar_t scaled = static_cast<scalar_t>(static_cast<float>(r[j]) * inv);
        dst[j] = static_cast<scalar_t>(scaled * wv[j]);
      }
    }
  }
}

// The host-side branch condition, as upstream computes it.
bool fused_add_uses_vec8(const at::Tensor& input, const at::Tensor& residual,
                         const at::Tensor& weight, const RowShape& s) {
  constexpr int kWidth = 8;
  constexpr int kAlign = kWidth * 2;  // 16 bytes: 8 x fp16/bf16
  const auto inp = reinterpret_cast<std::uintptr_t>(input.data_ptr());
  const auto res = reinterpret_cast<std::uintptr_t>(residual.data_ptr());
  const auto wt = reinterpret_cast<std::uintptr_t>(weight.data_ptr());
  const bool aligned = inp % kAlign == 0 && res % kAlign == 0 && wt % kAlign == 0;
  const bool multiples = s.hidden % kWidth == 0 && s.input_stride % kWidth == 0;
  return aligned && multiples;
}

void fused_add_rms_norm_cpu(at::Tensor& input, at::Tensor& residual, const at::Tensor& weight,
                            double epsilon) {
  const RowShape s = fused_add_checks(input, residual, weight);
  const float eps = static_cast<float>(epsilon);
  const bool vec8 = fused_add_uses_vec8(input, residual, weight, s);
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, input.scalar_type(), "fused_add_rms_norm", [&] {
        scalar_t* in = input.data_ptr<scalar_t>();
        scalar_t* res = residual.data_ptr<scalar_t>();
        const scalar_t* w = weight.data_ptr<scalar_t>();
        if (s.num_tokens == 0) return;
        // The kernels index input rows as dense (stride(-1) is assumed 1, never checked).
        guard_span(input, 0, (s.num_tokens - 1) * s.input_stride + s.hidden - 1, "input");
        guard_span(residual, 0, s.num_tokens * s.hidden - 1, "residual");
        guard_span(weight, 0, s.hidden - 1, "weight");
        if constexpr (std::is_same_v<scalar_t, float>) {
          fused_add_scalar(in, res, w, s, eps);  // float32: no vector specialisation
        } else {
          if (vec8) {
            fused_add_vec8(in, res, w, s, eps);
          } else {
            fused_add_scalar(in, res, w, s, eps);
          }
        }
      });
}

void rms_norm_meta(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double) {
  rms_norm_checks<SymSized>(out, input, weight);
}
void fused_add_rms_norm_meta(at::Tensor& input, at::Tensor& residual, const at::Tensor& weight,
                             double) {
  fused_add_checks<SymSized>(input, residual, weight);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C, m) {
  m.def("rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()");
  m.def("fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()");
}
TORCH_LIBRARY_IMPL(opc_C, CPU, m) {
  m.impl("rms_norm", &rms_norm_cpu);
  m.impl("fused_add_rms_norm", &fused_add_rms_norm_cpu);
}
TORCH_LIBRARY_IMPL(opc_C, Meta, m) {
  m.impl("rms_norm", &rms_norm_meta);
  m.impl("fused_add_rms_norm", &fused_add_rms_norm_meta);
}
