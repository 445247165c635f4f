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

struct ArgObservation {
  int arg = 0;  // schema index
  at::Tensor storage;
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
