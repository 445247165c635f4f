// The known-findings stage: findings a contract (`known_findings:`) or a ratchet file
// (--known, reports/known_file.h) lists are marked known, with the listed reason; a listed
// one that did not occur becomes a finding of its own, so a fixed op makes its contract
// (or the file) drop the entry. An entry marked `sometimes` may be absent. An entry whose
// `where:` leaves this machine out (another CPU, another build of the op library), or
// whose mode did not run (eager on CUDA without a GPU), is neither: it goes to the
// result's not_applicable with why, and matches no finding. Every
// entry, wherever it applies, is also kept as listed (ContractResult::known_listed).
//
//   apply_known_findings(contract.known_findings, "known_findings", read_platform(), result);
#pragma once

#include <string>
#include <vector>

#include "check/result.h"
#include "spec/contract.h"
#include "support/platform.h"

namespace opc {

// `list_name` names the list in the message of an entry not found.
void apply_known_findings(const std::vector<KnownFinding>& known, const std::string& list_name,
                          const Platform& platform, ContractResult& r);

// Whether an entry of `known` that applies on `platform` lists `f`, as apply_known_findings
// will find: a check can spare a known finding what only a new one needs.
bool known_here(const std::vector<KnownFinding>& known, const Platform& platform, const ContractFinding& f);

// Why `scope` leaves `platform` out ("needs the CPU feature amx_tile, which this CPU
// lacks"), or "" when it applies here.
std::string scope_miss(const KnownScope& scope, const Platform& platform);

// The machines `scope` names, in words ("amx_tile, vllm/_C"; "no avx512f"); "" for everywhere.
std::string scope_text(const KnownScope& scope);

}  // namespace opc
