// The compiled mode, real: the op called through torch.compile(fullgraph=True,
// dynamic=True) in the embedded Python (runners/python/bridge.h), the way vLLM's compiled
// model calls it: mutable arguments passed in and written, returns used afterwards.
//
//   TorchCompileRun run = run_torch_compile(op, contract, c, facts, "inductor");
//   // run.skipped: no graph fitted and none was compiled (the C++ model judges the case)
//   // run.obs.threw / .error: PyTorch's own message (compile error, functionalization
//   // refusal, custom-op aliasing error); else the caller's tensors and the returns.
//
// A case runs on a graph compiled for an earlier case when dynamo's guards let it; it
// compiles a graph of its own only when it reaches something the contract lists that no
// graph was compiled for (an argument's dtype, layout, None or sizes symbolic or not, a
// listed scalar value, a declared branch; see
// compile_reaches), at most kTorchCompileGraphBudget per backend in a worker. So a check
// compiles a graph per dtype, layout and branch it reaches, not one per scalar value or
// size pattern it draws, and compiled_graphs() says why each was compiled.
//
// runners/compiled_runner.h is opcontract's C++ model of the same; it runs without Python
// and checks what the real path cannot (see docs/clauses-and-modes.md, "Modes", the compiled mode).
#pragma once

#include <string>
#include <vector>

#include "generators/case.h"
#include "generators/layout.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

// The backends every compiled case runs through, in order.
inline const char* const kTorchCompileBackends[] = {"aot_eager", "inductor"};

// Graphs one check (one worker) may compile per backend, compile attempts that failed
// included: a safety net, since a graph is compiled only for a dtype, layout or branch no
// graph reached yet (a compile costs 0.3-6 s).
inline constexpr int kTorchCompileGraphBudget = 8;

struct TorchCompileRun {
  Observation obs;
  int compilations = 0;  // graphs compiled so far for this op and backend
  bool skipped = false;  // no graph fitted and it reached nothing new: nothing to judge
  bool compiled = false;  // this case compiled a graph
};

TorchCompileRun run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                                  const CaseFacts& facts, const std::string& backend,
                                  int budget = kTorchCompileGraphBudget);

// What the case reaches that the contract lists, in words: each tensor argument's dtype,
// layout and whether its sizes are all symbolic (>= 2) or not (or None), the value of each
// scalar the contract gives several to choose from, each declared branch it hits
// ("x float16", "x transposed", "x all sizes >= 2", "epsilon=1e-05", "branch no_pad").
std::vector<std::string> compile_reaches(const Contract& contract, const Case& c, const CaseFacts& facts);

}  // namespace opc
