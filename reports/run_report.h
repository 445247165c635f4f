// The results of one `opcontract check` run, and the writers that present them:
// a table per op for people, JSON (docs/format.md, "Results") for machines.
//
//   std::vector<RunEntry> run = ...;          // one entry per contract (or regression)
//   for (RunEntry& e : run) settle_entry(e);   // replay commands, regression verdicts
//   print_text_report(std::cout, run);
//   std::cout << platform_text(read_platform());   // what the run judged on
//   write_file(path, json_report(run, read_platform()));
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "check/result.h"
#include "spec/contract.h"
#include "support/platform.h"

namespace opc {

struct RunEntry {
  std::shared_ptr<const Contract> contract;  // null when the contract failed to load
  ContractResult result;
  const Regression* regression = nullptr;  // set when the target is a listed regression
  // "opcontract check FILE --target T [--load L]": a finding's replay adds its seed and
  // case count.
  std::string replay_base;
  // "opcontract replay [--load L]": a finding made replaying a corpus case adds its file.
  std::string case_replay_base;
};

// Completes the result with what the run knows beside the check: each finding's target,
// seed and replay command, and for a regression target its expectation and how the run
// met it (check/result.h, regression_verdict). Before printing or writing it.
void settle_entry(RunEntry& e);
// Whether this entry is what the run wanted: a contract that holds, or a regression
// caught as expected.
bool entry_ok(const RunEntry& e);

void print_text_report(std::ostream& out, const std::vector<RunEntry>& run);
// "judged on: x86_64, <model>\n   CPU features: avx2 avx512f (no amx_tile)\n   2 cores ...":
// what a verdict may depend on besides the op (a known finding's `where:`).
std::string platform_text(const Platform& p);
// The results and the platform they were judged on (docs/format.md, "Results").
std::string json_report(const std::vector<RunEntry>& run, const Platform& platform);

}  // namespace opc
