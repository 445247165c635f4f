// What a runner saw when it called an op on one case; the only input of the oracles.
//
// Per tensor argument: the storage it lives in (guards included), the view passed, its
// metadata before and after, and a copy of the storage bytes before the call (the bytes
// after are read from the storage itself). Per return: the value and its metadata.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace opc {

struct TensorMeta {
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  const void* storage = nullptr;  // StorageImpl identity
  const void* impl = nullptr;     // TensorImpl identity
  const void* data = nullptr;     // data pointer of the storage

  static TensorMeta of(const at::Tensor& t);
  bool operator==(const TensorMeta&) const = default;
};

// What an op changed about a tensor's identity between `before` and `after` (sizes,
// strides, storage offset, dtype, storage), in words; "" when nothing. Without
// `with_data`, a reallocated storage (same StorageImpl, new data pointer) does not count:
// Meta storages have no data to compare.
std::string metadata_change(const TensorMeta& before, const TensorMeta& after, bool with_data = true);

struct ArgObservation {
  int arg = 0;  // schema index
  at::Tensor storage;
  // The view as the caller handed it in. An op may resize, re-stride, re-point or re-type
  // the tensor it was given; `after` records that, and `view` is then rebuilt from
  // `storage` with the caller's geometry, so that every oracle reads the memory the caller
  // owns rather than whatever the op left the tensor pointing at.
  at::Tensor view;
  TensorMeta before, after;
  std::vector<uint8_t> bytes_before;
};

struct ReturnObservation {
  bool is_tensor = false;
  at::Tensor value;
  TensorMeta meta;
};

struct Observation {
  bool threw = false;
  std::string error;
  std::vector<ArgObservation> tensors;
  std::vector<ReturnObservation> returns;
};

}  // namespace opc
