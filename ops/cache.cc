// Port of vLLM _C_cache_ops::reshape_and_cache_flash and _C_cache_ops::concat_and_cache_mla
// (csrc/cache_kernels.cu: reshape_and_cache_flash_kernel with block/page/head strides, NHD
// and HND branches; concat_and_cache_mla_kernel; DISPATCH_BY_KV_CACHE_DTYPE).
//
//   reshape_and_cache_flash: num_tokens = slot_mapping.size(0) (key may be longer: cudagraph
//   padding); num_heads, head_size = key.size(1), key.size(2); block_size = key_cache.size(1);
//   strides key.stride(0), value.stride(0), key_cache.stride(0..2). Only check upstream makes:
//   key_cache.stride(0) == value_cache.stride(0) -- value_cache is addressed with key_cache's
//   page and head strides. Per token: slot < 0 is skipped; else block = slot / block_size,
//   offset = slot % block_size, and the num_heads*head_size row (dense after stride(0)) is
//   copied to cache + block*block_stride + offset*page_stride (+ head*head_stride per head in
//   the HND branch, taken when head_stride != head_size). Nothing else of the cache is touched.
//   concat_and_cache_mla: num_tokens = slot_mapping.size(0); kv_lora_rank = kv_c.size(1),
//   pe_dim = k_pe.size(1); check kv_cache.size(2) == kv_lora_rank + pe_dim; per token with
//   slot >= 0 write kv_c[t] then k_pe[t] to kv_cache + block*stride(0) + offset*stride(1).
//   Sources are read densely after stride(0) (stride(1) is assumed 1, never checked).
//   With kv_cache_dtype "auto" the kernel is instantiated for the source dtype and the cache
//   pointer is reinterpret_cast to it: values are copied bit for bit, the cache dtype is not
//   checked (nor value's / k_pe's dtype), and scales are not read.
//
// Deliberate reductions: kv_cache_dtype "auto" only -- "fp8", "fp8_e4m3", "fp8_e5m2" and
// "fp8_ds_mla" TORCH_CHECK-fail (upstream quantises); other strings fail with upstream's
// "Unsupported data type of kv cache". block_size 0 and accesses outside a tensor's storage
// (slot past the cache, slot_mapping longer than key) raise instead of undefined behaviour.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <string>

#include "ops/cache_checks.h"
#include "ops/port_guard.h"

namespace {

using opc::port::guard_bytes;

using opc::port::auto_element_size;
using opc::port::flash_checks;
using opc::port::FlashShape;
using opc::port::SizeOf;
using opc::port::SymSized;

void reshape_and_cache_flash_cpu(const at::Tensor& key, const at::Tensor& value,
                                 at::Tensor& key_cache, at::Tensor& value_cache,
                                 const at::Tensor& slot_mapping, std::string kv_cache_dtype,
                                 const at::Tensor& k_scale, const at::Tensor& v_scale) {
  const FlashShape s = flash_checks(key, value, key_cache, value_cache, slot_mapping);
  const int64_t es = auto_element_size(key, kv_cache_dtype);
  const int64_t* slots = slot_mapping.data_ptr<int64_t>();
  if (s.num_tokens == 0 || s.num_heads * s.head_size == 0) return;  // empty grid / block
  TORCH_CHECK(s.block_size != 0, "opc port: key_cache.size(1) (block_size) is 0; upstream "
              "divides slots by it in the kernel");
  const auto* ksrc = static_cast<const char*>(key.data_ptr());
  const auto* vsrc = static_cast<const char*>(value.data_ptr());
  auto* kdst = static_cast<char*>(key_cache.data_ptr());
  auto* vdst = static_cast<char*>(value_cache.data_ptr());
  const int64_t row = s.num_heads * s.head_size;
  const bool contiguous_heads = s.head_stride == s.head_size;  // NHD layout
  guard_bytes(slot_mapping, 0, s.num_tokens * 8, "slot_mapping");
  for (int64_t t = 0; t < s.num_tokens; ++t) {
    const int64_t slot = slots[t];
    if (slot < 0) continue;  // padding token
    const int64_t block = slot / s.block_size;
    const int64_t offset = slot % s.block_size;
    const int64_t src_k = t * s.key_stride;
    const int64_t src_v = t * s.value_stride;
    const int64_t dst = block * s.block_stride + offset * s.page_stride;
    guard_bytes(key, src_k * es, (src_k + row) * es, "key");
    guard_bytes(value, src_v * es, (src_v + row) * es, "value");
    if (contiguous_heads) {
      guard_bytes(key_cache, dst * es, (dst + row) * es, "key_cache");
      guard_bytes(value_cache, dst * es, (dst + row) * es, "value_cache");
      std::memcpy(kdst + dst * es, ksrc + src_k * es, row * es);
      std::memcpy(vdst + dst * es, vsrc + src_v * es, row * es);
    } else {
      // HND: heads strided in the cache, each head_size segment contiguous.
      for (int64_t h = 0; h < s.num_heads; ++h) {
        const int64_t dh = dst + h * s.head_stride;
        const int64_t sh = h * s.head_size;
        guard_bytes(key_cache, dh * es, (dh + s.head_size) * es, "key_cache");
        guard_bytes(value_cache, dh * es, (dh + s.head_size) * es, "value_cache");
        std::memcpy(kdst + dh * es, ksrc + (src_k + sh) * es, s.head_size * es);
        std::memcpy(vdst + dh * es, vsrc + (src_v + sh) * es, s.head_size * es);
      }
    }
  }
}

void reshape_and_cache_flash_meta(const at::Tensor& key, const at::Tensor& value,
                                  at::Tensor& key_cache, at::Tensor& value_cache,
                                  const at::Tensor& slot_mapping, std::string kv_cache_dtype,
                                  const at::Tensor&, const at::Tensor&) {
  flash_checks<SymSized>(key, value, key_cache, value_cache, slot_mapping);
  auto_element_size(key, kv_cache_dtype);
}

template <typename Int>
struct MlaShapeOf {
  Int num_tokens, kv_lora_rank, pe_dim, block_size;
  Int kv_c_stride, k_pe_stride, block_stride, entry_stride;
};
using MlaShape = MlaShapeOf<int64_t>;

// T: at::Tensor for the CPU kernel, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
MlaShapeOf<SizeOf<T>> mla_checks(const T& kv_c, const T& k_pe, const T& kv_cache,
                                 const T& slot_mapping, const std::string& kv_cache_dtype) {
  MlaShapeOf<SizeOf<T>> s{};
  s.num_tokens = slot_mapping.size(0);
  s.kv_lora_rank = kv_c.size(1);
  s.pe_dim = k_pe.size(1);
  s.block_size = kv_cache.size(1);
  if (kv_cache_dtype == "fp8_ds_mla") auto_element_size(kv_c, kv_cache_dtype);  // reduced
  TORCH_CHECK(kv_cache.size(2) == s.kv_lora_rank + s.pe_dim);
  s.kv_c_stride = kv_c.stride(0);
  s.k_pe_stride = k_pe.stride(0);
  s.block_stride = kv_cache.stride(0);
  s.entry_stride = kv_cache.stride(1);
  return s;
}

void concat_and_cache_mla_cpu(const at::Tensor& kv_c, const at::Tensor& k_pe,
                              at::Tensor& kv_cache, const at::Tensor& slot_mapping,
                              std::string kv_cache_dtype, const at::Tensor& scale) {
  const MlaShape s = mla_checks(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype);
  const int64_t es = auto_element_size(kv_c, kv_cache_dtype);
  const int64_t* slots = slot_mapping.data_ptr<int64_t>();
  if (s.num_tokens == 0 || s.kv_lora_rank == 0) return;  // empty grid / block
  TORCH_CHECK(s.block_size != 0, "opc port: kv_cache.size(1) (block_size) is 0; upstream "
              "divides slots by it in the kernel");
  const auto* c_src = static_cast<const char*>(kv_c.data_ptr());
  const auto* pe_src = static_cast<const char*>(k_pe.data_ptr());
  auto* dst = static_cast<char*>(kv_cache.data_ptr());
  guard_bytes(slot_mapping, 0, s.num_tokens * 8, "slot_mapping");
  for (int64_t t = 0; t < s.num_tokens; ++t) {
    const int64_t slot = slots[t];
    if (slot < 0) continue;  // padding token
    const int64_t block = slot / s.block_size;
    const int64_t offset = slot % s.block_size;
    const int64_t d = block * s.block_stride + offset * s.entry_stride;
    const int64_t sc = t * s.kv_c_stride;
    const int64_t sp = t * s.k_pe_stride;
    guard_bytes(kv_c, sc * es, (sc + s.kv_lora_rank) * es, "kv_c");
    guard_bytes(k_pe, sp * es, (sp + s.pe_dim) * es, "k_pe");
    guard_bytes(kv_cache, d * es, (d + s.kv_lora_rank + s.pe_dim) * es, "kv_cache");
    std::memcpy(dst + d * es, c_src + sc * es, s.kv_lora_rank * es);
    std::memcpy(dst + (d + s.kv_lora_rank) * es, pe_src + sp * es, s.pe_dim * es);
  }
}

void concat_and_cache_mla_meta(const at::Tensor& kv_c, const at::Tensor& k_pe,
                               at::Tensor& kv_cache, const at::Tensor& slot_mapping,
                               std::string kv_cache_dtype, const at::Tensor&) {
  mla_checks<SymSized>(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype);
  auto_element_size(kv_c, kv_cache_dtype);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C_cache_ops, m) {
  m.def(
      "reshape_and_cache_flash(Tensor key, Tensor value, Tensor! key_cache, Tensor! "
      "value_cache, Tensor slot_mapping, str kv_cache_dtype, Tensor k_scale, Tensor v_scale) "
      "-> ()");
  m.def(
      "concat_and_cache_mla(Tensor kv_c, Tensor k_pe, Tensor! kv_cache, Tensor slot_mapping, "
      "str kv_cache_dtype, Tensor scale) -> ()");
}
TORCH_LIBRARY_IMPL(opc_C_cache_ops, CPU, m) {
  m.impl("reshape_and_cache_flash", &reshape_and_cache_flash_cpu);
  m.impl("concat_and_cache_mla", &concat_and_cache_mla_cpu);
}
TORCH_LIBRARY_IMPL(opc_C_cache_ops, Meta, m) {
  m.impl("reshape_and_cache_flash", &reshape_and_cache_flash_meta);
  m.impl("concat_and_cache_mla", &concat_and_cache_mla_meta);
}
