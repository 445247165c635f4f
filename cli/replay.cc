#include "cli/replay.h"

#include "check/bind_ops.h"
#include "check/case_worker.h"
#include "check/mode_plan.h"
#include "spec/contract_loader.h"
#include "generators/case_file.h"
#include "generators/layout.h"
#include "reports/observation_text.h"
#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "support/error_text.h"

namespace opc::cli {

int run_replay(const ReplayOptions& o, std::ostream& out) {
  const CaseFileRecord record = read_case_file(o.case_file);
  if (o.contract.empty() && !stays_inside(record.contract))
    throw ContractError({o.case_file, 0, 0},
                        "the case names the contract '" + record.contract +
                            "', outside the working directory; pass --contract FILE to name it yourself");
  const Contract contract = load_contract(o.contract.empty() ? record.contract : o.contract);
  const Case c = parse_case(record, contract);
  const BoundOps bound = bind_ops(contract, record.target);

  CheckOptions check;
  check.isolate = o.isolate;
  check.python = o.python;
  check.modes = o.modes;
  check.set_user_timeout(o.case_timeout_s);
  check.capture_output = !verbose_errors();
  const CaseOps ops = case_ops(bound, contract, check);
  CaseWorker worker(ops, contract, isolation_for(contract, check));
  const ModePlan plan = plan_modes(contract, o.modes, ops, worker);
  worker.set_modes(plan.run);

  out << "replaying " << o.case_file << ": " << record.target << " under " << contract.file << "\n"
      << "   case: " << describe(c, contract) << "\n"
      << "   recorded: " << record.clause << mode_note(record.mode)
      << " with seed " << record.seed << ": " << record.message << "\n";
  for (const auto& [m, why] : plan.not_run) out << "   " << to_string(m) << " not run: " << why << "\n";
  for (const auto& [m, how] : plan.ran_as)
    if (!plan.not_run.count(m)) out << "   " << to_string(m) << " runs as " << how << "\n";
  const CaseOutcome outcome = worker.run(c);
  out << (outcome.findings.empty() ? "now: no finding\n" : "now:\n");
  for (const Finding& f : outcome.findings)
    out << "   - " << f.clause << " (" << f.mode << "): " << f.message << "\n";
  if (!outcome.output.empty()) out << "printed during the case (the op and torch):\n" << outcome.output
                                   << (outcome.output.back() == '\n' ? "" : "\n");
  if (outcome.worker_died) {
    out << "observation: none (the op took the worker down; rerun with --no-isolation under a "
           "debugger to see it)\n";
  } else {
    // In this process: the worker survived this case, so this call will too.
    const Observation obs = run_eager(bound.op, contract, c, materialize(c, contract, CaseFacts(c, contract)));
    out << "observation (eager):\n" << observation_text(obs, contract);
  }
  return outcome.findings.empty() ? 0 : 1;
}

}  // namespace opc::cli
