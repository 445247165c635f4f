#include "check/check_contract.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "check/bind_ops.h"
#include "check/case_loop.h"
#include "check/case_worker.h"
#include "check/check_error.h"
#include "check/check_turn.h"
#include "check/known_findings.h"
#include "check/mode_plan.h"
#include "oracles/oracles.h"
#include "runners/python/bridge.h"
#include "support/names.h"
#include "support/platform.h"

namespace opc {
namespace {

// What a check of `target` under `contract` is a check of, in words (ContractResult::checked).
std::string checked_text(const Contract& contract, const std::string& target) {
  if (target == contract.port) return "opcontract's port of " + contract.op;
  for (const Regression& g : contract.regressions)
    if (g.target == target)
      return "a historical variant of " + contract.op +
             (contract.port.empty() && !contract.written_for.empty()
                  ? " (planted on " + contract.written_for + "'s own code)"
                  : " (opcontract's port)");
  if (target != contract.op) return "";
  if (contract.written_for.empty()) return "";
  const std::string dist = contract.written_for.substr(0, contract.written_for.find(' '));
  const std::string want = contract.written_for.substr(dist.size() + 1);
  std::string found;
  try {
    found = python::installed_version(dist);
  } catch (const std::exception&) {
    return contract.written_for +
           ", as the contract says (the installed version is unknown "
           "without the embedded Python)";
  }
  if (found.empty()) return dist + " (not installed here; the contract is written for " + want + ")";
  // Which of its builds was loaded: a library picked by the CPU's features (vLLM's _C,
  // _C_AVX512, _C_AVX2) judges differently.
  std::string libraries;
  try {
    libraries = join(python::loaded_libraries(dist));
  } catch (const std::exception& e) {
    libraries = "its loaded libraries unknown (" + std::string(e.what()) + ")";
  }
  return dist + " " + found + (libraries.empty() ? "" : ", " + libraries) +
         (found == want ? "" : " (the contract is written for " + want + ")");
}

// The result before anything ran: every mode not run, with the contract's reason where
// it skips the mode, so that every mode has a result whatever ends the check.
ContractResult initial_result(const Contract& contract, const std::string& target, const CheckOptions& options) {
  ContractResult r = empty_result(contract.file, contract.op, target);
  r.checked = checked_text(contract, target);
  if (!options.variant.empty()) r.checked += (r.checked.empty() ? "" : " ") + ("(" + options.variant + ")");
  r.seed = options.seed;
  for (Mode m : kAllModes) {
    const auto skip = contract.skip.find(m);
    r.modes[m].reason = skip != contract.skip.end() ? std::string(kSkippedByContract) + ": " + skip->second
                                                    : "the check ended (see its error) before this mode ran";
  }
  return r;
}

// The findings no case is needed for: the registered schemas against the contract's.
void add_schema_findings(const Contract& contract, const BoundOps& bound, ContractResult& r) {
  if (auto f = check_schema(contract, bound.op.handle.schema()))
    r.findings.push_back({Clause::Schema, std::nullopt, f->message});
  if (bound.donating)
    if (auto f = check_donating_schema(contract, bound.donating->annotations))
      r.findings.push_back({f->clause, Mode::Compiled, f->message});
}

// Why no case can run ("" when they can): a case runs in eager, or without it (a contract
// that skips eager) in the fake mode alone.
std::string why_no_case_runs(const Contract& contract, const BoundOps& bound, const ModePlan& plan) {
  if (std::string unfit = unfit_reason(*contract.schema, bound.op.handle.schema()); !unfit.empty()) return unfit;
  if (plan.run.empty())
    return "the contract skips the eager mode, and the fake mode, which then runs alone, does not run either";
  return "";
}

// What each mode judges, the plan's left-out modes, and when no case runs, every planned
// mode, as not run.
void record_not_run(const Contract& contract, const ModePlan& plan, const std::string& no_cases, ContractResult& r) {
  for (const auto& [m, judged] : plan.judged) r.modes[m].judged = judged;
  for (const auto& [m, why] : plan.not_run) r.modes[m].reason = why;
  if (no_cases.empty()) return;
  for (Mode m : plan.run)
    if (!contract.skip.count(m)) r.modes[m].reason = no_cases;
}

struct KnownList {
  const std::vector<KnownFinding>* entries;
  std::string name;  // in the message of an entry not found
};

// The known-findings lists a check of `target` applies. A contract's own list is about its
// op and port, not about the regressions it lists.
std::vector<KnownList> known_lists(const Contract& contract, const std::string& target, const CheckOptions& options) {
  std::vector<KnownList> lists;
  if (target == contract.op || target == contract.port) lists.push_back({&contract.known_findings, "known_findings"});
  lists.push_back({&options.known, "the known-findings file"});
  return lists;
}

void mark_known(const std::vector<KnownList>& lists, const Platform& platform, ContractResult& r) {
  for (const KnownList& l : lists) apply_known_findings(*l.entries, l.name, platform, r);
}

}  // namespace

ContractResult check_contract(const Contract& contract, const std::string& target, const CheckOptions& options) {
  const CheckTurn turn;  // checks side by side take turns, but at their workers
  const auto began = std::chrono::steady_clock::now();
  ContractResult r = initial_result(contract, target, options);
  try {
    const BoundOps bound = bind_ops(contract, target);
    const Platform platform = read_platform();  // once the op libraries are loaded
    const std::vector<KnownList> known = known_lists(contract, target, options);
    const KnownHere known_here_now = [&](const ContractFinding& f) {
      return std::any_of(known.begin(), known.end(),
                         [&](const KnownList& l) { return known_here(*l.entries, platform, f); });
    };
    add_schema_findings(contract, bound, r);
    auto contract_ptr = std::make_shared<const Contract>(contract);
    const CaseOps ops = case_ops(bound, contract, options);
    CaseWorker worker(ops, *contract_ptr, isolation_for(contract, options));
    const ModePlan plan = plan_modes(contract, options.modes, ops, worker);
    const std::string no_cases = why_no_case_runs(contract, bound, plan);
    record_not_run(contract, plan, no_cases, r);
    if (no_cases.empty()) run_cases(contract_ptr, bound.op, options, plan, worker, known_here_now, r);
    mark_known(known, platform, r);
    r.verdict = verdict_of(r);
  } catch (...) {
    r.verdict = Verdict::Error;
    r.errors = {check_error_text(contract)};
  }
  r.seconds.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return r;
}

bool regression_makes_mistakes(const std::vector<Clause>& expect) {
  return std::find(expect.begin(), expect.end(), Clause::Misuse) != expect.end() ||
         std::find(expect.begin(), expect.end(), Clause::Crash) != expect.end();
}

}  // namespace opc
