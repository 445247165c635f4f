// The results tables the docs show (docs/vllm.md, contracts/vllm-cpu/FINDINGS.md): a row
// per op, generated from `check --json` result files, so that a committed page cannot say
// an op holds while its contract lists a defect.
//
// A row says what a passing check establishes on every machine, not what one run happened
// to meet: a mode's cell lists the clauses its contract's `known_findings` expect there
// (with the machines an entry is scoped to, and "sometimes"), whether or not this machine
// met them; "FAIL" only for findings no entry lists. So the table a passing check writes is
// the same on an AVX2 and an AMX machine, and CI can compare it with the committed one.
// Rows merge the builds of one op (vLLM's _C, _C_AVX512, _C_AVX2); "checked" keeps only
// what the op is (a version, a port), not which build this machine ran.
//
//   const std::string table = opc::results_table(opc::read_campaign({"build/reports/vllm-cpu.json"}));
//   const opc::TableBlock b = opc::parse_table_block("docs/vllm.md:vllm-cpu");
//   opc::update_table_block(b, table);                          // or:
//   std::string diff = opc::table_block_difference(b, table);   // "" when it holds it
//
// A block is the lines between `<!-- begin results: NAME -->` and `<!-- end results: NAME -->`,
// each marker on a line of its own; everything else in the file is left as it is.
#pragma once

#include <string>

#include "reports/campaign_report.h"

namespace opc {

// The Markdown table of every plain check in `campaign`, by op, with the regressions each
// op's contract lists; a cudagraph column only where some contract asks for that mode.
std::string results_table(const Campaign& campaign);

struct TableBlock {
  std::string path, name;
};
// "FILE:NAME" (the last colon splits them); throws ReportError on anything else.
TableBlock parse_table_block(const std::string& spec);
// Writes `table` into the block (atomically); throws ReportError naming file:line when the
// file cannot be read or written or its markers are missing, repeated or out of order.
void update_table_block(const TableBlock& block, const std::string& table);
// "" when the block holds exactly `table`; else where they first differ, as
// "FILE:LINE: the block `NAME` has ... where the results give ...".
std::string table_block_difference(const TableBlock& block, const std::string& table);

}  // namespace opc
