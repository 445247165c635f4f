// `opcontract admit`: the calls a real program made (python -m opcontract.record) held to
// the contracts: per op, how many calls its contract admits, why the others are not, and
// every op called that no contract covers.
#include <iostream>

#include "check/traffic.h"
#include "cli/command.h"
#include "reports/traffic_report.h"
#include "support/atomic_file.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract admit RECORDING... [--contracts DIR]... [--json FILE] [--import M]...

  Holds the contracts under DIR (default contracts/) to the custom-op calls a program made,
  as `python -m opcontract.record --out RECORDING -- program.py` records them: per op, the
  calls seen, those its contract admits (its dims bound from the call, each within its
  range, the dtypes, layouts, None-ness, values and scalars the contract draws, storage
  shared only as the contract's views of one buffer or its in-place uses, constraints and
  requires), each rejected pattern with its reason and one example
  call, and every op called that no contract covers, with its NOT_COVERED reason.
  --json     also writes the result as JSON (for `opcontract report`'s "real calls" column).
  --import   modules whose types the contracts' schemas name (vLLM's LayerName).
  Exit: 0 (a measurement, not a verdict), 2 for a bad recording or command line.
)";

void finish(Args& a) {
  if (a.contracts.empty()) throw UsageError("admit needs at least one RECORDING (python -m opcontract.record --out FILE)");
  if (a.contract_dirs.empty()) a.contract_dirs = {"contracts"};
}

int run(const Args& a, const Session&) {
  const auto calls = load_recordings(a.contracts);
  if (!calls) return 2;
  const auto contracts = load_contract_dirs(a.contract_dirs);
  TrafficResult t = hold_to_contracts(*calls, contracts, not_covered(a.contract_dirs, contracts));
  t.recordings = a.contracts;
  print_traffic(std::cout, t);
  if (!a.json.empty()) write_file_atomically(a.json, traffic_json(t));
  return 0;
}

}  // namespace

Command admit_command() { return {"admit", kUsage, {"--contracts", "--json"}, finish, run}; }

}  // namespace opc::cli
