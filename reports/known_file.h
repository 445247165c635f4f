// The expected-failures ratchet: a checked-in file of known findings, per contract and
// target, like opcheck's failures_dict.json. With `--known FILE`, a finding it lists is
// reported as known (xfail); one it does not list fails as usual; a listed one that no
// longer occurs fails too (xpass), so the file only ever shrinks by a deliberate edit.
// `--update-known` rewrites the file from the run.
//
//   std::vector<KnownEntry> known = load_known_file("known_findings.json");  // {} if absent
//   options.known = known_for(known, contract.file, target);
//   write_known_file("known_findings.json", entries);                         // atomically
//
// The file (JSON, version 1):
//   {"version": 1, "known": [{"contract": "contracts/vllm/x.yaml", "target": "ns::op",
//                             "clause": "padding", "mode": "eager", "reason": "..."}]}
#pragma once

#include <string>
#include <vector>

#include "spec/contract.h"

namespace opc {

struct KnownEntry {
  std::string contract, target;
  KnownFinding finding;  // loc: the file and the entry's line
};

// A missing file is an empty list; a malformed one a ContractError (file:line:column).
std::vector<KnownEntry> load_known_file(const std::string& path);
void write_known_file(const std::string& path, const std::vector<KnownEntry>& entries);

struct RunEntry;
// The file as `--update-known` rewrites it after `run`: for each contract and target the
// run checked, exactly the findings it made that the contract does not already know
// (an entry's reason is kept; a new one says it was recorded); other entries stay.
std::vector<KnownEntry> updated_known(const std::vector<KnownEntry>& old, const std::vector<RunEntry>& run);

// The entries for one contract file and target.
std::vector<KnownFinding> known_for(const std::vector<KnownEntry>& entries, const std::string& contract,
                                    const std::string& target);

}  // namespace opc
