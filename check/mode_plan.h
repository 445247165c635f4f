// The second stage of a check: which modes its cases run in, why each other one does not,
// and how the fake and compiled modes run (PyTorch's own or opcontract's C++ paths).
//
//   const ModePlan plan = plan_modes(contract, options.modes, ops, worker);
//   worker.set_modes(plan.run);
//   for (const auto& [mode, why] : plan.not_run) ...   // "left out by --modes", ...
#pragma once

#include <map>
#include <string>
#include <vector>

#include "check/bind_ops.h"
#include "check/case_worker.h"
#include "spec/contract.h"

namespace opc {

struct ModePlan {
  std::vector<Mode> run;                // eager first (unless the contract skips it), then each other mode that runs
  std::map<Mode, std::string> not_run;  // why each other one does not
  std::map<Mode, std::string> ran_as;   // how the fake and compiled modes run, in words
  // Per mode, run or not, the clauses it judges for the contract (judges(), in catalogue
  // order): what the result records, and reports show, as judged.
  std::map<Mode, std::vector<Clause>> judged;
};

// Eager, then each other mode that neither the contract's `skip:`, nor `asked` (--modes;
// empty: all), nor this machine leaves out. A contract that skips eager (an op that cannot
// run here) runs its fake mode alone.
ModePlan plan_modes(const Contract& contract, const std::vector<Mode>& asked, const CaseOps& ops,
                    CaseWorker& worker);

}  // namespace opc
