// What one op's merged results say at a glance, in the same words on every view: its
// badge, its dashboard row and its summary.md row. First match wins:
//
//   error            red        a check of the op ended in an error
//   fails: C1, C2    red        it breaks its contract: the failing clauses, in the order found
//   N known defects  orange     it holds only through known findings (the contract's
//                               known_findings or a --known file, each with its reason)
//   not run          lightgrey  no mode ran; or "<mode> not run": a mode the contract asks
//                               for did not run (no GPU, --modes), `reason` says why
//   conforms         brightgreen every mode the contract asks for ran and nothing was found
//
// Modes the contract leaves out (`skip:` with its reason) are not asked for.
//
//   const OpStatus s = op_status(op);    // op: one of op_results(campaign)
//   s.text, s.color, s.reason
//   for (const ContractResult& op : worst_first(op_results(campaign))) ...
#pragma once

#include <string>
#include <vector>

#include "reports/campaign_report.h"

namespace opc {

enum class OpStatusKind { Conforms, KnownDefects, Fails, Error, NotRun };

struct OpStatus {
  OpStatusKind kind;
  std::string text;    // "conforms", "3 known defects", "fails: alias, compiled", ...
  std::string color;   // a shields.io colour name
  std::string reason;  // why not run, for NotRun
};

OpStatus op_status(const ContractResult& op);

// "conforms", "known-defects", "fails", "error", "not-run": a CSS class, a word for counts.
const char* status_class(OpStatusKind kind);

// The ops reordered for a reader, the worst first: errors, fails, known defects, not run,
// conforms; by name within each (the order op_results gives).
std::vector<ContractResult> worst_first(std::vector<ContractResult> ops);

}  // namespace opc
