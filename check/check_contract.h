// Checks one contract against one op: the whole pipeline, stage by stage.
//
//   CheckOptions opt;  opt.cases = 100;  opt.seed = 7;
//   ContractResult r = check_contract(contract, "opc_vllm::rms_norm", opt);
//   r.verdict  // "pass", "fail" or "error"
//
// The stages, each in a file of its own here:
//   bind_ops      bind the op and its companions, fit them to the contract, start Python
//   mode_plan     which modes run, why the others do not, how fake and compiled run
//   case_loop     run the cases (the corpus, then case_draws' generated ones) in the
//                 case_worker, where case_judge runs each mode and its oracles;
//                 shrink_finding shrinks each new finding
//   known_findings  mark the findings the contract or a ratchet file lists
//   result        the verdict
//
// Deterministic: the same contract, target, seed and case count give the same cases,
// findings and shrunk cases, on every machine. Never throws: an error of the check
// itself is the result's verdict "error" with its text.
#pragma once

#include <string>
#include <vector>

#include "check/options.h"
#include "check/result.h"
#include "spec/contract.h"

namespace opc {

ContractResult check_contract(const Contract& contract, const std::string& target, const CheckOptions& options);

// Whether a historical variant (a contract's `regressions:` entry) runs the misuse search:
// held to the clauses it expects, it makes caller's mistakes only where one is misuse, or
// crash (a fault on valid input a mistake meets first is a crash, check/case_worker.h).
bool regression_makes_mistakes(const std::vector<Clause>& expect);

}  // namespace opc
