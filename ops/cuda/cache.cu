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

#include "ops/cache_checks.h"
#include "ops/port_guard.h"

namespace {

// Elements (of width es) from t.data_ptr() to the end of its storage.
int64_t room_elements(const at::Tensor& t, int64_t es) {
  const opc::port::StorageRoom r = opc::port::storage_room(t);
  return (r.cap_bytes - r.base_bytes) / es;
}

struct FlashArgs {
  opc::port::FlashShape s;
  int64_t key_room, value_room, key_cache_room, value_cache_room;
};

template <typename T>
__global__ void reshape_and_cache_flash_kernel(const T* key, const T* value, T* key_cache,
                                               T* value_cache, const int64_t* slot_mapping,
                                               FlashArgs a) {
  const opc::port::FlashShape& s = a.s;
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;  // padding token
  const int64_t block = slot / s.block_size;
  const int64_t offset = slot % s.block_size;
  const int64_t row = s.num_heads * s.head_size;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    const int64_t head = i / s.head_size;
    const int64_t j = i % s.head_size;
    const int64_t src_k = t * s.key_stride + i;
    const int64_t src_v = t * s.value_stride + i;
    const int64_t dst = block * s.block_stride + offset * s.page_stride + head * s.head_stride + j;
    if (src_k >= 0 && src_k < a.key_room && dst >= 0 && dst < a.key_cache_room)
      key_cache[dst] = key[src_k];
    if (src_v >= 0 && src_v < a.value_room && dst >= 0 && dst < a.value_cache_room)
      value_cache[dst] = value[src_v];
  }
}

template <typename T>
void launch(const at::Tensor& key, const at::Tensor& value, at::Tensor& key_cache,
            at::Tensor& value_cache, const int64_t* slots, int64_t num_tokens, const FlashArgs& a) {
  const int64_t row = a.s.num_heads * a.s.head_size;
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
  FlashArgs a{};
  a.s = opc::port::flash_checks(key, value, key_cache, value_cache, slot_mapping);
  const int64_t num_tokens = a.s.num_tokens;
  const int64_t es = opc::port::auto_element_size(key, kv_cache_dtype);
  const int64_t* slots = slot_mapping.data_ptr<int64_t>();
  if (num_tokens == 0 || a.s.num_heads * a.s.head_size == 0) return;  // empty grid / block
  TORCH_CHECK(a.s.block_size != 0, "opc port: key_cache.size(1) (block_size) is 0; upstream "
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
