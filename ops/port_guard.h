// Memory-safety guards of the CPU ports (ops/*.cc) -- not upstream checks.
//
// Upstream vLLM kernels index raw pointers and trust the caller: a result too small for the
// input, a slot past the cache or a strided view read densely touches memory outside the
// tensor's storage, silently, on the GPU. A CPU port doing the same would corrupt the heap
// of the checker itself, so before every access a port asks whether the elements it is
// about to touch lie inside the tensor's storage, and raises a c10::Error starting with
// "opc port:" when they do not (the port diverges from upstream there, by design: a
// contract sees an error instead of undefined behaviour).
//
//   opc::port::guard_span(t, lo, hi, "input")       elements [lo, hi] (inclusive), counted
//                                                    from t.data_ptr(); hi < lo: nothing
//   opc::port::guard_bytes(t, lo, hi_excl, "key")   bytes [lo, hi_excl) from t.data_ptr()
//   opc::port::guard_index(t, i, "experts_ids")     one element written at t.data_ptr()[i]
//
// All three measure against the same room: t.storage().nbytes() minus t's storage offset.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace opc::port {

// Bytes of t's storage before t.data_ptr() (its storage offset) and in all.
struct StorageRoom {
  int64_t base_bytes;
  int64_t cap_bytes;
};

inline StorageRoom storage_room(const at::Tensor& t) {
  return {t.storage_offset() * static_cast<int64_t>(t.element_size()),
          static_cast<int64_t>(t.storage().nbytes())};
}

// Elements [lo, hi] relative to t.data_ptr() must lie inside t's storage.
inline void guard_span(const at::Tensor& t, int64_t lo, int64_t hi, const char* what) {
  if (hi < lo) return;  // nothing accessed
  const int64_t es = static_cast<int64_t>(t.element_size());
  const StorageRoom r = storage_room(t);
  const int64_t base = r.base_bytes / es;
  const int64_t cap = r.cap_bytes / es;
  TORCH_CHECK(base + lo >= 0 && base + hi < cap, "opc port: the kernel would access ", what,
              " elements [", lo, ", ", hi, "] past its storage (", cap - base,
              " elements from data_ptr); upstream does this out of bounds, unchecked");
}

// Bytes [lo, hi_excl) relative to t.data_ptr() must lie inside t's storage.
inline void guard_bytes(const at::Tensor& t, int64_t lo, int64_t hi_excl, const char* what) {
  if (hi_excl <= lo) return;  // nothing accessed
  const StorageRoom r = storage_room(t);
  TORCH_CHECK(r.base_bytes + lo >= 0 && r.base_bytes + hi_excl <= r.cap_bytes,
              "opc port: the kernel would access ", what, " bytes [", lo, ", ", hi_excl,
              ") past its storage (", r.cap_bytes - r.base_bytes,
              " bytes from data_ptr); upstream does this out of bounds, unchecked");
}

// Element i relative to t.data_ptr() (about to be written) must lie inside t's storage.
inline void guard_index(const at::Tensor& t, int64_t i, const char* what) {
  const int64_t es = static_cast<int64_t>(t.element_size());
  const StorageRoom r = storage_room(t);
  const int64_t base = r.base_bytes / es;
  const int64_t cap = r.cap_bytes / es;
  TORCH_CHECK(i >= 0 && base + i < cap, "opc port: the kernel would write ", what, "[", i,
              "] past its storage (", cap - base,
              " elements from data_ptr); upstream does this out of bounds, unchecked");
}

}  // namespace opc::port
