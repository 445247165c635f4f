// The shrink stage: a failing generated case made as small as it gets while the same
// clause keeps failing in the same mode, so one bug does not slide into another on the
// way down.
//
//   ShrunkFinding s = shrink_finding(worker, shrinkable, first_outcome, first_finding, 2000);
//   s.finding.minimal, s.finding.shrink_steps, s.finding.message   // the minimal case's
//   s.died                                  // its run killed the worker
#pragma once

#include <rapidcheck/Shrinkable.h>

#include "check/case_worker.h"
#include "check/result.h"
#include "oracles/oracles.h"

namespace opc {

struct ShrunkFinding {
  ContractFinding finding;  // message and output are the minimal case's
  bool died = false;        // the minimal case's run killed the worker (a crash, not a hang)
};

// `budget`: the most cases the shrink may run. `first` is the failing case's run, kept
// when no smaller case fails.
ShrunkFinding shrink_finding(CaseWorker& worker, rc::Shrinkable<Case> failing, const CaseOutcome& first,
                             const Finding& finding, int budget);

}  // namespace opc
