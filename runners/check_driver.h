// Checks one contract against one op: generates cases, runs each mode, asks the
// oracles, shrinks every new kind of finding to a minimal case.
//
//   CheckOptions opt;  opt.cases = 100;  opt.seed = 7;
//   ContractResult r = check_contract(contract, "opc_vllm::rms_norm", opt);
//   r.verdict  // "pass", "fail" or "error"
//
// Deterministic: the same contract, target, seed and case count give the same cases,
// findings and shrunk cases, on every machine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "contracts/contract.h"
#include "generators/case.h"

namespace opc {

inline constexpr uint64_t kDefaultSeed = 20261202;

struct ContractResult;

struct CheckOptions {
  int cases = 100;
  uint64_t seed = kDefaultSeed;
  int max_shrink_runs = 2000;  // op calls one shrink may spend
  // Called about once a second during a long check with the result so far.
  std::function<void(const ContractResult& so_far, double cases_per_s)> progress;
};

struct ModeResult {
  std::string status;  // pass | fail | not_run
  int cases = 0;
  std::string reason;  // why not run
};

struct ContractFinding {
  std::string clause;
  std::string mode;     // "" for static clauses (schema, branches)
  std::string message;  // about the minimal case
  bool has_case = false;
  Case minimal;
  int cases_tried = 0;  // cases generated up to and including the first failing one
  int shrink_steps = 0;
  std::string known;    // the contract's reason, when it lists this finding under known_findings
};

struct ContractResult {
  std::string file, op, target;
  std::string verdict;  // pass | fail | error
  std::string error;    // with verdict "error"
  uint64_t seed = 0;
  int cases = 0;
  std::map<Mode, ModeResult> modes;
  std::vector<std::pair<std::string, int>> branches;  // name, hits
  std::vector<ContractFinding> findings;
  std::vector<std::string> warnings;  // worth a look, not a broken promise
};

struct OpBinding;
struct Finding;
class CaseFacts;
// The ops a checked case calls: the op under test and the companions its contract names.
struct CaseOps {
  const OpBinding& op;
  const OpBinding* reference = nullptr;  // `reference:`, compared with eager
  const OpBinding* donating = nullptr;   // `donates:`' overload, run in the compiled mode
};
// One whole checked case: eager (always) and the other `modes` asked for, each with its
// oracles; every finding says its mode.
// When `written` is given, sets written[i] for each argument whose bytes eager changed.
std::vector<Finding> case_findings(const CaseOps& ops, const Contract& contract, const Case& c,
                                   const CaseFacts& facts, const std::vector<Mode>& modes,
                                   std::vector<bool>* written);

ContractResult check_contract(const Contract& contract, const std::string& target,
                              const CheckOptions& options);

// The clauses that found something, sorted and unique.
std::vector<std::string> found_clauses(const ContractResult& r);

}  // namespace opc
