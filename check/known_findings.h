// The known-findings stage: findings a contract (`known_findings:`) or a ratchet file
// (--known, reports/known_file.h) lists are marked known, with the listed reason; a listed
// one that did not occur becomes a finding of its own, so a fixed op makes its contract
// (or the file) drop the entry. An entry marked `sometimes` may be absent.
//
//   apply_known_findings(contract.known_findings, "known_findings", result);
#pragma once

#include <string>
#include <vector>

#include "check/result.h"
#include "contracts/contract.h"

namespace opc {

// `where` names the list in the message of an entry not found.
void apply_known_findings(const std::vector<KnownFinding>& known, const std::string& where, ContractResult& r);

}  // namespace opc
