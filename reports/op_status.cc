#include "reports/op_status.h"

#include <algorithm>
#include <vector>

#include "support/names.h"

namespace opc {
namespace {

// The clauses of the findings that break the contract (not known ones), in the order found.
std::vector<std::string> failing_clauses(const ContractResult& op) {
  std::vector<std::string> out;
  for (const ContractFinding& f : op.findings)
    if (f.known.empty()) add_unique(out, to_string(f.clause));
  return out;
}

// The first mode the contract asks for that did not run, or none; `ran` counts those that did.
const Mode* missing_mode(const ContractResult& op, int& ran) {
  const Mode* missing = nullptr;
  ran = 0;
  for (const Mode& m : kAllModes) {
    const ModeResult& o = op.modes.at(m);
    if (o.status == ModeStatus::NotRun && o.reason.rfind(kSkippedByContract, 0) == 0) continue;  // not asked for
    if (mode_verdict(op, m) != ModeVerdict::NotRun) ++ran;
    else if (!missing) missing = &m;
  }
  return missing;
}

}  // namespace

OpStatus op_status(const ContractResult& op) {
  if (!op.errors.empty()) return {OpStatusKind::Error, "error", "red", ""};
  if (const std::vector<std::string> failing = failing_clauses(op); !failing.empty())
    return {OpStatusKind::Fails, "fails: " + join(failing), "red", ""};
  const auto known = std::count_if(op.findings.begin(), op.findings.end(),
                                   [](const ContractFinding& f) { return !f.known.empty(); });
  if (known) return {OpStatusKind::KnownDefects, std::to_string(known) + " known defect" + (known > 1 ? "s" : ""), "orange", ""};
  int ran = 0;
  if (const Mode* m = missing_mode(op, ran)) {
    const std::string why = op.modes.at(*m).reason.empty() ? "no result file ran this mode" : op.modes.at(*m).reason;
    return {OpStatusKind::NotRun, ran == 0 ? "not run" : std::string(to_string(*m)) + " not run", "lightgrey",
            std::string(to_string(*m)) + " not run: " + why};
  }
  return {OpStatusKind::Conforms, "conforms", "brightgreen", ""};
}

std::vector<ContractResult> worst_first(std::vector<ContractResult> ops) {
  const auto rank = [](const ContractResult& op) {
    switch (op_status(op).kind) {
      case OpStatusKind::Error: return 0;
      case OpStatusKind::Fails: return 1;
      case OpStatusKind::KnownDefects: return 2;
      case OpStatusKind::NotRun: return 3;
      case OpStatusKind::Conforms: return 4;
    }
    return 5;
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return ops;
}

const char* status_class(OpStatusKind kind) {
  switch (kind) {
    case OpStatusKind::Conforms: return "conforms";
    case OpStatusKind::KnownDefects: return "known-defects";
    case OpStatusKind::Fails: return "fails";
    case OpStatusKind::Error: return "error";
    case OpStatusKind::NotRun: return "not-run";
  }
  return "";
}

}  // namespace opc
