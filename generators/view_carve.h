// Where a `view:` argument lies in its buffer: the contract's steps (select, narrow,
// chunk, view, transpose) applied to the buffer's dense geometry at a case's dims, as
// PyTorch's Tensor methods of those names would apply them, without making a tensor.
//
//   carve_views(case, contract);   // every Layout::View tensor's `carved` set
//
// So the generator states vLLM's geometries (q, k, v as slices of one fused qkv buffer;
// key and value caches as kv_cache.view(nb, kvh, 2 * bs, hd).chunk(2, dim=2)) and the
// materialiser builds them on one storage (runners/materialize.h). A step that does not
// apply at the case's dims (a narrow past the end, a view the strides forbid) or steps
// that end in other sizes than the argument's shape are the contract's fault: a
// ContractError at that step.
#pragma once

#include <cstdint>
#include <vector>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

// `a`'s place in its buffer at these values (context and dims, by slot); `sizes` gets the
// sizes the steps end in.
Carved carve(const ArgSpec& a, const Contract& contract, const std::vector<int64_t>& values,
             std::vector<int64_t>& sizes);

// Sets `carved` of every Layout::View tensor of the case from its dims; a ContractError
// when the steps end in other sizes than the tensor's.
void carve_views(Case& c, const Contract& contract);

// PyTorch's rule for x.view(sizes) of a tensor with these sizes and strides: the new
// strides, or none when the view would need a copy.
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& new_sizes);

}  // namespace opc
