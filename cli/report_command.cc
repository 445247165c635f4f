// `opcontract report`: check --json result files merged into summary.md, junit.xml,
// index.html and badges (reports/campaign_report.h).
#include <iostream>

#include "cli/command.h"
#include "reports/campaign_report.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract report RESULTS.json... --out DIR

  Merges `check --json` result files (shards, runners, --regressions runs) and writes
  DIR/summary.md, junit.xml, index.html and badges/<op>.{svg,json}; exit 0 once written,
  findings or not, 2 on a bad result file or DIR.
)";

void finish(Args& a) {
  if (a.contracts.empty() || a.out.empty())
    throw UsageError("report needs at least one RESULTS.json (from check --json) and --out DIR");
}

int run(const Args& a, const Session&) {
  write_campaign_report(read_campaign(a.contracts), a.out);
  std::cerr << "opcontract: wrote " << a.out << "/{summary.md,junit.xml,index.html,badges/}\n";
  return 0;
}

}  // namespace

Command report_command() { return {"report", kUsage, {"--out"}, finish, run}; }

}  // namespace opc::cli
