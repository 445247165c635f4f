// The run stage of a check: its cases one after another, each run in the worker and
// judged there. The corpus first (as it is, not shrunk), then generated cases (CaseDraws:
// in this shard, from the resume point, until the count, the deadline or a stop). Each
// new kind of finding (clause and mode) is kept once, shrunk when the generator made its
// case; the progress and checkpoint hooks are told as it goes; at the end the run's
// coverage is judged (branches never hit, in-place uses never made) and every mode that
// ran gets its result. `known` says whether a finding is one the known-findings lists
// name here: a known crash's minimal case is not run again for what the libraries' crash
// handlers print (about a second and a half a crash with vLLM's tvm_ffi), unless --verbose.
//
//   run_cases(contract_ptr, bound.op, options, plan, worker, known, result);
#pragma once

#include <functional>
#include <memory>

#include "check/case_worker.h"
#include "check/mode_plan.h"
#include "check/options.h"
#include "check/result.h"
#include "spec/contract.h"
#include "runners/op_binding.h"

namespace opc {

using KnownHere = std::function<bool(const ContractFinding&)>;

void run_cases(std::shared_ptr<const Contract> contract, const OpBinding& op, const CheckOptions& options,
               const ModePlan& plan, CaseWorker& worker, const KnownHere& known, ContractResult& r);

}  // namespace opc
