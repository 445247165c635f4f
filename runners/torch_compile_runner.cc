#include "runners/torch_compile_runner.h"

#include <algorithm>

#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "runners/python/bridge.h"

namespace opc {

std::vector<std::string> compile_reaches(const Contract& contract, const Case& c, const CaseFacts& facts) {
  std::vector<std::string> reaches;
  for (const ArgSpec& a : contract.args) {
    const auto* t = std::get_if<TensorCase>(&c.args[a.index]);
    // A scalar the contract lists values for: an int or float is a constant of the graph.
    if (!t && a.choices.size() > 1) reaches.push_back(a.name + "=" + scalar_text(std::get<ScalarValue>(c.args[a.index])));
    if (!t) continue;
    if (t->none) {
      reaches.push_back(a.name + " None");
      continue;
    }
    const Layout layout = layout_applies(t->layout, t->sizes.size()) ? t->layout : Layout::Contiguous;
    reaches.push_back(a.name + " " + dtype_name(t->dtype));
    reaches.push_back(a.name + " " + to_string(layout));
    // Sizes of 0 and 1 are specialised, the others symbols: a fake that cannot take a
    // symbol fails only on a case whose sizes are all >= 2.
    const bool symbolic = std::all_of(t->sizes.begin(), t->sizes.end(), [](int64_t s) { return s >= 2; });
    reaches.push_back(a.name + (symbolic ? " all sizes >= 2" : " a size of 0 or 1"));
  }
  for (const NamedExpr& b : contract.branches)
    if (b.expr.eval(facts.input()) != 0) reaches.push_back("branch " + b.name);
  return reaches;
}

TorchCompileRun run_torch_compile(const OpBinding& op, const Contract& contract, const Case& c,
                                  const CaseFacts& facts, const std::string& backend, int budget) {
  Materialized m = materialize(c, contract, facts);
  TorchCompileRun run;
  for (const TensorArg& t : m.tensors) run.obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, false));
  set_context(contract, c, m.args);
  std::string context;
  for (const auto& v : contract.values)
    if (v.is_context) context += v.name + "=" + std::to_string(c.values[v.slot]) + " ";
  python::CompiledResult r =
      python::compiled_call(op, m.args, backend, context, budget, compile_reaches(contract, c, facts));
  m.args.clear();
  run.compilations = r.compilations;
  run.skipped = r.skipped;
  run.compiled = r.compiled;
  if (!r.ok) {
    run.obs.threw = true;
    run.obs.error = r.error;
  }
  observe_after(r.returns, run.obs);
  return run;
}

}  // namespace opc
