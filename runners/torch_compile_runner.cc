#include "runners/torch_compile_runner.h"

#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "runners/python/bridge.h"

namespace opc {

TorchCompileRun run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                                  const CaseFacts& facts, const std::string& backend, int budget) {
  Materialized m = materialize(c, contract, facts);
  TorchCompileRun run;
  for (const TensorArg& t : m.tensors) run.obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, false));
  set_context(contract, c, m.args);
  std::string context;
  for (const auto& v : contract.values)
    if (v.is_context) context += v.name + "=" + std::to_string(c.values[v.slot]) + " ";
  python::CompiledResult r = python::compiled_call(op, m.args, backend, context, budget);
  m.args.clear();
  run.compilations = r.compilations;
  run.skipped = r.skipped;
  if (!r.ok) {
    run.obs.threw = true;
    run.obs.error = r.error;
  }
  observe_after(r.returns, run.obs);
  return run;
}

}  // namespace opc
