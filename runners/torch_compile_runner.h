// The compiled mode, real: the op called through torch.compile(fullgraph=True,
// dynamic=True) in the embedded Python (runners/python_bridge.h), the way vLLM's compiled
// model calls it: mutable arguments passed in and written, returns used afterwards. The
// compiled function is cached per op, backend and argument signature, so a check compiles
// once per guard set, not once per case.
//
//   Observation obs = run_torch_compile(op, contract, c, facts, "inductor", &compilations);
//   // obs.threw / obs.error: PyTorch's own message (compile error, functionalization
//   // refusal, custom-op aliasing error); else the caller's tensors and the returns.
//
// runners/compiled_runner.h is opcontract's C++ model of the same; it runs without Python
// and checks what the real path cannot (see README, "The compiled mode's two variants").
#pragma once

#include <string>

#include "generators/case.h"
#include "generators/layout.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

// The backends every compiled case runs through, in order.
inline const char* const kTorchCompileBackends[] = {"aot_eager", "inductor"};

Observation run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                              const CaseFacts& facts, const std::string& backend, int* compilations);

}  // namespace opc
