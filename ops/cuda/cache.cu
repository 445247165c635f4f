// CUDA kernel of the _C_cache_ops::reshape_and_cache_flash port (ops/cache.cc states the
// semantics): one block per token of slot_mapping (num_tokens = slot_mapping.size(0); key
// may be longer), threads striding over the num_heads * head_size elements of the row, and
// upstream's index arithmetic:
//   slot < 0: skipped; block = slot / block_size, offset = slot % block_size;
//   element i = head * head_size + j: src = t * key.stride(0) + i (rows dense after
//   stride(0)), dst = block * key_cache.stride(0) + offset * key_cache.stride(1)
//                     + head * key_cache.stride(2) + j
//   (the NHD layout, head_stride == head_size, is the same formula with dst + i); value and
//   value_cache likewise, value_cache addressed with key_cache's strides. Elements are
//   copied bit for bit in the source's element width ("auto": the cache dtype is not
//   checked, scales are not read).
// Host side exactly as the CPU port: the one upstream check key_cache.stride(0) ==
// value_cache.stride(0); "auto" only (fp8 strings refused as not ported, others with
// upstream's "Unsupported data type of kv cache"); slot_mapping read as int64; empty grid or
// block returns early; block_size 0 refused; slot_mapping guarded.
// One difference, forced: the slot values live on the device, so the per-token storage
// guards the CPU port raises from cannot run on the host without a sync (which would break
// graph capture). The kernel instead compares every access with the storage room of its
// tensor (elements from data_ptr, as opc::port::guard_span measures) and skips one that
// would fall outside it, where upstream writes out of bounds.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/port_guard.h"

namespace {

int64_t auto_element_size(const at::Tensor& src, const std::string& kv_cache_dtype) {
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

// Elements (of width es) from t.data_ptr() to the end of its storage.
int64_t room_elements(const at::Tensor& t, int64_t es) {
  const opc::port::StorageRoom r = opc::port::storage_room(t);
  return (r.cap_bytes - r.base_bytes) / es;
}

struct FlashArgs {
  int64_t num_heads, head_size, block_size;
  int64_t key_stride, value_stride, block_stride, page_stride, head_stride;
  int64_t key_room, value_room, key_cache_room, value_cache_room;
};

template <typename T>
__global__ void reshape_and_cache_flash_kernel(const T* key, const T* value, T* key_cache,
                                               T* value_cache, const int64_t* slot_mapping,
                                               FlashArgs a) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;  // padding token
  const int64_t block = slot / a.block_size;
  const int64_t offset = slot % a.block_size;
  const int64_t row = a.num_heads * a.head_size;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    const int64_t head = i / a.head_size;
    const int64_t j = i % a.head_size;
    const int64_t src_k = t * a.key_stride + i;
    const int64_t src_v = t * a.value_stride + i;
    const int64_t dst = block * a.block_stride + offset * a.page_stride + head * a.head_stride + j;
    if (src_k >= 0 && src_k < a.key_room && dst >= 0 && dst < a.key_cache_room)
      key_cache[dst] = key[src_k];
    if (src_v >= 0 && src_v < a.value_room && dst >= 0 && dst < a.value_cache_room)
      value_cache[dst] = value[src_v];
  }
}

template <typename T>
void launch(const at::Tensor& key, const at::Tensor& value, at::Tensor& key_cache,
            at::Tensor& value_cache, const int64_t* slots, int64_t num_tokens, const FlashArgs& a) {
  const int64_t row = a.num_heads * a.head_size;
  const int threads = static_cast<int>(std::min<int64_t>(row, 512));
  reshape_and_cache_flash_kernel<T><<<num_tokens, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      static_cast<const T*>(key.data_ptr()), static_cast<const T*>(value.data_ptr()),
      static_cast<T*>(key_cache.data_ptr()), static_cast<T*>(value_cache.data_ptr()), slots, a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void reshape_and_cache_flash_cuda(const at::Tensor& key, const at::Tensor& value,
                                  at::Tensor& key_cache, at::Tensor& value_cache,
                                  const at::Tensor& slot_mapping, std::string kv_cache_dtype,
                                  const at::Tensor& k_scale, const at::Tensor& v_scale) {
  const int64_t num_tokens = slot_mapping.size(0);
  FlashArgs a{};
  a.num_heads = key.size(1);
  a.head_size = key.size(2);
  a.block_size = key_cache.size(1);
  a.key_stride = key.stride(0);
  a.value_stride = value.stride(0);
  a.block_stride = key_cache.stride(0);
  a.page_stride = key_cache.stride(1);
  a.head_stride = key_cache.stride(2);
  TORCH_CHECK(key_cache.stride(0) == value_cache.stride(0));
  const int64_t es = auto_element_size(key, kv_cache_dtype);
  const int64_t* slots = slot_mapping.data_ptr<int64_t>();
  if (num_tokens == 0 || a.num_heads * a.head_size == 0) return;  // empty grid / block
  TORCH_CHECK(a.block_size != 0, "opc port: key_cache.size(1) (block_size) is 0; upstream "
              "divides slots by it in the kernel");
  opc::port::guard_bytes(slot_mapping, 0, num_tokens * 8, "slot_mapping");
  a.key_room = room_elements(key, es);
  a.value_room = room_elements(value, es);
  a.key_cache_room = room_elements(key_cache, es);
  a.value_cache_room = room_elements(value_cache, es);
  const c10::cuda::CUDAGuard device(key.device());
  // Bit-for-bit copies: dispatch on the element width only.
  switch (es) {
    case 4: launch<uint32_t>(key, value, key_cache, value_cache, slots, num_tokens, a); break;
    case 2: launch<uint16_t>(key, value, key_cache, value_cache, slots, num_tokens, a); break;
    default: TORCH_CHECK(false, "opc port: unexpected element size ", es);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(opc_C_cache_ops, CUDA, m) {
  m.impl("reshape_and_cache_flash", &reshape_and_cache_flash_cuda);
}
