// The compiled mode, real: the op called through torch.compile(fullgraph=True,
// dynamic=True) in the embedded Python (runners/python/bridge.h), the way vLLM's compiled
// model calls it: mutable arguments passed in and written, returns used afterwards. The
// compiled function is cached per op, backend and argument signature, so a check compiles
// once per guard set, not once per case.
//
//   TorchCompileRun run = run_torch_compile(op, contract, c, facts, "inductor");
//   // run.obs.threw / .error: PyTorch's own message (compile error, functionalization
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

// Graphs one check (one worker) may compile per backend: a compile costs about 0.3 s, and a
// check's cases vary dtypes, layouts, 0/1 sizes and scalar values, each a guard set. A case
// that would need one more graph runs in the C++ model of torch.compile only.
inline constexpr int kTorchCompileGraphBudget = 8;

struct TorchCompileRun {
  Observation obs;
  int compilations = 0;        // graphs compiled so far for this op and backend
  bool skipped = false;        // it needed a graph beyond `budget`: nothing to judge
};

TorchCompileRun run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                                  const CaseFacts& facts, const std::string& backend,
                                  int budget = kTorchCompileGraphBudget);

}  // namespace opc
