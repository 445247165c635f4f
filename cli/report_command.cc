// `opcontract report`: check --json result files merged into summary.md, junit.xml,
// index.html and badges (reports/campaign_report.h), and into the results tables the docs
// keep (reports/results_table.h).
#include <iostream>

#include "cli/command.h"
#include "reports/campaign_report.h"
#include "reports/results_table.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract report RESULTS.json... [--out DIR] [--update-table FILE:BLOCK]... [--check-table FILE:BLOCK]...

  Merges `check --json` result files (shards, runners, --regressions runs).
  --out DIR                 writes DIR/summary.md, junit.xml, index.html and badges/<op>.{svg,json}
  --update-table FILE:BLOCK writes the results table (a row per op: each mode's verdict and the
                            known findings its contract lists) between FILE's lines
                            `<!-- begin results: BLOCK -->` and `<!-- end results: BLOCK -->`
  --check-table FILE:BLOCK  exit 1 when that block differs from the table these results give
  Exit 0 once written (findings or not) and every checked table matches, 1 a table differs,
  2 a bad result file, DIR or FILE.
)";

void finish(Args& a) {
  if (a.contracts.empty() || (a.out.empty() && a.update_tables.empty() && a.check_tables.empty()))
    throw UsageError("report needs at least one RESULTS.json (from check --json) and --out DIR, "
                     "--update-table FILE:BLOCK or --check-table FILE:BLOCK");
}

int run(const Args& a, const Session&) {
  const Campaign campaign = read_campaign(a.contracts);
  if (!a.out.empty()) {
    write_campaign_report(campaign, a.out);
    std::cerr << "opcontract: wrote " << a.out << "/{summary.md,junit.xml,index.html,badges/}\n";
  }
  const std::string table = results_table(campaign);
  for (const std::string& spec : a.update_tables) {
    update_table_block(parse_table_block(spec), table);
    std::cerr << "opcontract: wrote the results table into " << spec << "\n";
  }
  int status = 0;
  for (const std::string& spec : a.check_tables) {
    if (const std::string diff = table_block_difference(parse_table_block(spec), table); !diff.empty()) {
      std::cout << diff << "\n  the committed table is stale: write it with `opcontract report ... --update-table "
                << spec << "` (scripts/results-pages)\n";
      status = 1;
    } else {
      std::cout << spec << ": the results table matches these results\n";
    }
  }
  return status;
}

}  // namespace

Command report_command() {
  return {"report", kUsage, {"--out", "--update-table", "--check-table"}, finish, run};
}

}  // namespace opc::cli
