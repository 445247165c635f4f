// Host-side checks of the reshape_and_cache_flash / concat_and_cache_mla ports, shared by
// the CPU kernels (ops/cache.cc) and the CUDA ones (ops/cuda/cache.cu), so both make
// exactly upstream's checks:
//
//   const int64_t es = opc::port::auto_element_size(key, kv_cache_dtype);
//   const opc::port::FlashShape s = opc::port::flash_checks(key, value, kc, vc, slots);
//
// The Meta kernel makes the same checks on sizes that may be symbolic:
// flash_checks<opc::port::SymSized>(...) (ops/sym_sized.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "ops/sym_sized.h"

namespace opc::port {

// DISPATCH_BY_KV_CACHE_DTYPE, reduced to "auto": returns the element size the kernel would
// be instantiated with (that of the source dtype).
inline int64_t auto_element_size(const at::Tensor& src, const std::string& kv_cache_dtype) {
  if (kv_cache_dtype == "auto") {
    const auto st = src.scalar_type();
    TORCH_CHECK(st == at::kFloat || st == at::kHalf || st == at::kBFloat16,
                "Unsupported input type of kv cache: ", st);
    return static_cast<int64_t>(src.element_size());
  }
  if (kv_cache_dtype == "fp8" || kv_cache_dtype == "fp8_e4m3" || kv_cache_dtype == "fp8_e5m2" ||
      kv_cache_dtype == "fp8_ds_mla") {
    TORCH_CHECK(false, "opc port: kv_cache_dtype '", kv_cache_dtype,
                "' is not ported (this reduced port supports 'auto' only)");
  }
  TORCH_CHECK(false, "Unsupported data type of kv cache: ", kv_cache_dtype);
  return 0;  // unreachable
}

template <typename Int>
struct FlashShapeOf {
  Int num_tokens, num_heads, head_size, block_size;
  Int key_stride, value_stride, block_stride, page_stride, head_stride;
};
using FlashShape = FlashShapeOf<int64_t>;

// T: at::Tensor for the CPU and CUDA kernels, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
FlashShapeOf<SizeOf<T>> flash_checks(const T& key, const T& value, const T& key_cache,
                                     const T& value_cache, const T& slot_mapping) {
  FlashShapeOf<SizeOf<T>> s{};
  s.num_tokens = slot_mapping.size(0);
  s.num_heads = key.size(1);
  s.head_size = key.size(2);
  s.block_size = key_cache.size(1);
  s.key_stride = key.stride(0);
  s.value_stride = value.stride(0);
  s.block_stride = key_cache.stride(0);
  s.page_stride = key_cache.stride(1);
  s.head_stride = key_cache.stride(2);
  TORCH_CHECK(key_cache.stride(0) == value_cache.stride(0));
  return s;
}

}  // namespace opc::port
