// One checked case, judged: the op run in eager (always) and in each other mode asked
// for, each run handed to the oracles of its clauses. This is what the case worker runs
// for every case (check/case_worker.h), in its own process.
//
//   std::vector<Finding> found = case_findings(ops, contract, c, CaseFacts(c, contract),
//                                              {Mode::Eager, Mode::Fake}, &written);
//   found[0].mode   // the mode whose run found it
//
// An exception that is not the op's doing (its throws are observed) is an error of the
// check: a CheckError saying the contract, target, mode and case.
#pragma once

#include <vector>

#include "check/bind_ops.h"
#include "generators/case.h"
#include "generators/layout.h"
#include "oracles/oracles.h"
#include "spec/contract.h"

namespace opc {

// A case with a misuse (generators/misuse.h) runs eager only, in fenced memory, and is
// judged by the misuse clause alone; a fenced valid call (Case::fenced) runs eager only
// and is judged by its fault alone.
// When `written` is given, sets written[i] for each argument whose bytes eager changed.
std::vector<Finding> case_findings(const CaseOps& ops, const Contract& contract, const Case& c, const CaseFacts& facts,
                                   const std::vector<Mode>& modes, std::vector<bool>* written);

// The crash finding of a worker that died on `c` (killed, hung), as the case judges it: a
// caller's mistake made on purpose is `misuse` (the op should have refused it), a valid call
// in fenced memory (Case::fenced) that faults or hangs (`hung`) is a `crash` on valid input.
Finding judged_death(const Finding& crash, bool hung, const Case& c, const Contract& contract);

}  // namespace opc
