// The memory geometry each Layout gives a tensor: strides, storage offset, storage size.
//
// Shared by the generator (which checks `requires:` such as x.stride(-1) == 1 before a
// tensor exists) and the materialiser (which builds exactly this geometry), so the two
// can never disagree.
#pragma once

#include <cstdint>
#include <vector>

#include "generators/case.h"

namespace opc {

// Every tensor of a case lives in a storage of its own (the views of one `buffers:` entry
// share the buffer's) with kGuardElems guard elements
// before the base its layout carves the view from (runners/materialize.h), and storages
// start kStorageAlignment-byte aligned (PyTorch's CPU allocator): so the view's data
// pointer alignment is known before anything is allocated.
inline constexpr int64_t kGuardElems = 16;
inline constexpr int64_t kStorageAlignment = 64;

struct Geometry {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;         // elements from the start of the base to the view's first
  int64_t storage_elems = 0;  // elements of the base the view lives in
  bool contiguous = true;     // PyTorch's is_contiguous() for these sizes and strides
};

Geometry geometry_of(const TensorCase& t);

// Elements of the storage geometry_of(t) lays out, a size of 0 counted as 1 (it still
// sets strides), saturating at INT64_MAX: what the per-case size cap measures, safe to
// call on sizes too large to lay out.
int64_t storage_extent(const TensorCase& t);

// Whether `layout` changes anything for a tensor of this rank (transposed needs two
// dims, narrow one); the generator offers only those that do.
bool layout_applies(Layout layout, size_t rank);

// PyTorch's rule: dims of size 1 are ignored, an empty tensor is contiguous.
bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

}  // namespace opc

namespace opc {

// The geometry of every tensor of a case and the facts expressions read from them,
// in Scope::tensors order (None tensors read as 0-dim).
class CaseFacts {
 public:
  CaseFacts(const Case& c, const Contract& contract);
  EvalInput input() const { return {values_, facts_.data()}; }
  const Geometry& geometry(int arg_index) const { return geometry_[arg_index]; }

 private:
  const int64_t* values_;
  std::vector<Geometry> geometry_;  // per schema argument (empty for scalars)
  std::vector<TensorFacts> facts_;
};

}  // namespace opc
