// The compiled mode: what torch.compile does around an opaque custom op, in C++.
//
//  1. fake pre-pass (the fake mode's run);
//  2. auto_functionalize: clone each mutable argument, strides preserved, and call the
//     op on the clones;
//  3. AOTAutograd's custom-op aliasing guard on the real call (PyTorch 2.11-2.13): a
//     return whose StorageImpl is an input's, or an earlier return's, is an error;
//     ops whose returns carry alias annotations (view ops) are exempt;
//  4. copy the clones back into the caller's tensors (a clone whose metadata the op
//     changed cannot be: that is recorded instead);
//  5. Inductor may reuse a dead input's memory: overwrite every non-mutable input and
//     record whether any return changed.
//
// What PyTorch itself does there, measured: Note [torch.compile and custom-op aliasing]
// in runners/python/opcontract_bridge.py.
//
//   CompiledObservation obs = run_compiled(op, contract, c, facts);
#pragma once

#include "generators/case.h"
#include "generators/layout.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

struct CompiledObservation {
  Observation obs;             // caller's tensors after copy-back, and the returns
  std::vector<std::vector<uint8_t>> return_bytes;  // each return, dense, before inputs were overwritten
  std::string guard_error;     // the aliasing guard's message, when it fired
  std::vector<int> changed_by_dead_inputs;  // returns whose bytes moved when inputs were overwritten
  // Mutable arguments whose functional clone the op resized, re-strided, re-pointed or
  // re-typed: schema index, the clone's metadata before and after. Such a clone is not
  // copied back (it no longer fits the caller's tensor).
  struct CloneChange {
    int arg;
    TensorMeta before, after;
  };
  std::vector<CloneChange> clone_changes;
};

// With `padding_variant` >= 0 the padding rows hold that variant's garbage
// (fill_padding), and the dead-input step is left out: its overwrite would hide what the
// padding did to the returns.
CompiledObservation run_compiled(const OpBinding& op, const Contract& contract, const Case& c,
                                 const CaseFacts& facts, int padding_variant = -1);

// A tensor's elements, densely, row-major.
std::vector<uint8_t> dense_bytes(const at::Tensor& t);

// PyTorch's message for a custom op whose output aliases an input or another output.
std::string aliasing_guard_message(const std::string& op_name);

}  // namespace opc
