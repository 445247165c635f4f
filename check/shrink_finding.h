// The shrink stage: a failing generated case made as small as it gets while the same
// clause keeps failing in the same mode, so one bug does not slide into another on the
// way down.
//
//   ContractFinding f = shrink_finding(worker, shrinkable, first_finding, 2000);
//   f.minimal, f.shrink_steps, f.message   // message and output are the minimal case's
#pragma once

#include <rapidcheck/Shrinkable.h>

#include "check/case_worker.h"
#include "check/result.h"
#include "oracles/oracles.h"

namespace opc {

// `budget`: the most cases the shrink may run. `first_output` is what the failing case
// printed, kept when no smaller case fails.
ContractFinding shrink_finding(CaseWorker& worker, rc::Shrinkable<Case> failing, const Finding& first,
                               const std::string& first_output, int budget);

}  // namespace opc
