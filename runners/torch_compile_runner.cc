#include "runners/torch_compile_runner.h"

#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "runners/python_bridge.h"

namespace opc {

Observation run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                              const CaseFacts& facts, const std::string& backend, int* compilations) {
  Materialized m = materialize(c, contract, facts);
  Observation obs;
  for (const TensorArg& t : m.tensors) obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, false));
  set_context(contract, c);
  python::CompiledResult r = python::compiled_call(op, m.args, backend);
  m.args.clear();
  if (compilations) *compilations = r.compilations;
  if (!r.ok) {
    obs.threw = true;
    obs.error = r.error;
  }
  observe_after(r.returns, obs);
  return obs;
}

}  // namespace opc
