// Ops for views of one buffer (tests/contracts/views.yaml): key_cache and value_cache are
// the two halves of one KV buffer, as vLLM lays its caches out
// (kv.view(blocks, 2 * block, width).chunk(2, 1)). cache_scale writes key_cache = 2 *
// value_cache through the strides it is handed. Two planted defects:
// cache_scale_dense_rows walks key_cache as if it were dense (a kernel that ignores the
// block stride): on the views it writes the first half of value_cache, an input, and
// leaves key_cache's later blocks unwritten; cache_scale_writes_before writes the element
// just before key_cache, memory of the caller's storage it was never handed. key_half
// returns a view of key_cache, as its schema allows (tests/contracts/views_alias.yaml).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>

namespace {

void cache_scale(at::Tensor& key_cache, const at::Tensor& value_cache) { key_cache.copy_(value_cache * 2); }

void cache_scale_dense_rows(at::Tensor& key_cache, const at::Tensor& value_cache) {
  const at::Tensor doubled = (value_cache * 2).contiguous();
  std::memcpy(key_cache.data_ptr(), doubled.data_ptr(), doubled.nbytes());
}

void cache_scale_writes_before(at::Tensor& key_cache, const at::Tensor& value_cache) {
  key_cache.copy_(value_cache * 2);
  // Where the storage holds memory before the view (the caller's), not past a clone's start.
  if (key_cache.storage_offset() > 0) static_cast<float*>(key_cache.data_ptr())[-1] = 0.5f;
}

// A view of the key half it may alias; the planted twin returns a view of value_cache,
// which shares key_cache's storage but is not what the schema lets the return alias.
at::Tensor key_half(const at::Tensor& key_cache, const at::Tensor&) { return key_cache.select(1, 0); }
at::Tensor key_half_returns_value(const at::Tensor&, const at::Tensor& value_cache) {
  return value_cache.select(1, 0);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("cache_scale(Tensor! key_cache, Tensor value_cache) -> ()");
  m.def("cache_scale_dense_rows(Tensor! key_cache, Tensor value_cache) -> ()");
  m.def("cache_scale_writes_before(Tensor! key_cache, Tensor value_cache) -> ()");
  m.def("key_half(Tensor(a) key_cache, Tensor value_cache) -> Tensor(a)");
  m.def("key_half_returns_value(Tensor(a) key_cache, Tensor value_cache) -> Tensor(a)");
}

TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("cache_scale", &cache_scale);
  m.impl("cache_scale_dense_rows", &cache_scale_dense_rows);
  m.impl("cache_scale_writes_before", &cache_scale_writes_before);
  m.impl("key_half", &key_half);
  m.impl("key_half_returns_value", &key_half_returns_value);
}
