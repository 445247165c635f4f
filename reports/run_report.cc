#include "reports/run_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "check/result_json.h"
#include "support/names.h"
#include "support/output_capture.h"

namespace opc {
namespace {

// A cell of the table: what the mode recorded for the clause.
std::string cell(const ContractResult& r, Clause clause, Mode m) {
  const ModeResult& mr = r.modes.at(m);
  if (!mr.judges(clause)) return "-";
  if (mr.status == ModeStatus::NotRun) return "not run";
  const bool found = std::any_of(r.findings.begin(), r.findings.end(),
                                 [&](const ContractFinding& f) { return f.clause == clause && f.mode == m; });
  return found ? "FAIL" : "pass";
}

std::string headline(const RunEntry& e) {
  const ContractResult& r = e.result;
  if (r.verdict == Verdict::Error) return "ERROR";
  if (!r.regression) {
    const auto known = std::count_if(r.findings.begin(), r.findings.end(),
                                     [](const ContractFinding& f) { return !f.known.empty(); });
    if (r.verdict != Verdict::Pass) return "FAILS";
    const size_t elsewhere = r.not_applicable.size();
    const std::string scoped =
        elsewhere ? std::to_string(elsewhere) + " not applicable here" : std::string();
    if (!known) return elsewhere ? "HOLDS (known_findings: " + scoped + ")" : "HOLDS";
    return "HOLDS, with " + std::to_string(known) + " known finding" + (known > 1 ? "s" : "") +
           " (known_findings" + (elsewhere ? "; " + scoped : "") + ")";
  }
  const RegressionVerdict v = regression_verdict(r);
  const std::string by = clause_names(v.found), expect = clause_names(r.regression->expect);
  switch (v.kind) {
    case RegressionVerdict::NotRun:
      return "NOT RUN: it must be caught by " + expect + ", which no mode of this run judges (" + v.unjudged + ")";
    case RegressionVerdict::Caught:
      return "CAUGHT by " + by + ", as expected" + (v.unjudged.empty() ? "" : " (not judged here: " + v.unjudged + ")");
    default:
      if (by.empty()) return "NOT CAUGHT (expected: " + expect + ")";
      return "CAUGHT by " + by + ", but expected exactly " + expect;
  }
}

// What the op and torch printed on a finding's minimal case: its first lines, indented.
void print_output(std::ostream& out, const std::string& output) {
  if (output.empty()) return;
  constexpr int kShown = 12;
  const int lines = count_lines(output);
  out << "       printed on that case (" << lines << " line" << (lines == 1 ? "" : "s") << "):\n";
  std::istringstream in(output);
  int shown = 0;
  for (std::string line; shown < kShown && std::getline(in, line); ++shown) out << "       | " << line << "\n";
  if (lines > kShown) out << "       | ... " << lines - kShown << " more (the JSON results have them)\n";
}

// Where a check's time went: "14.2 s: setting up 1.1, cases 8.0 (eager 3.0, fake 2.1,
// compiled 2.5), caller's mistakes 1.9, shrinking 3.2"; the parts that took none are left out.
std::string time_text(const TimeSpent& t) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << t.total << " s: setting up "
      << std::max(0.0, t.total - t.cases - t.misuse - t.shrinking) << ", cases " << t.cases;
  if (!t.modes.empty()) {
    out << " (";
    for (auto it = t.modes.begin(); it != t.modes.end(); ++it)
      out << (it == t.modes.begin() ? "" : ", ") << to_string(it->first) << " " << it->second;
    out << ")";
  }
  if (t.misuse > 0) out << ", caller's mistakes " << t.misuse;
  if (t.shrinking > 0) out << ", shrinking " << t.shrinking;
  return out.str();
}

// The command that reproduces a finding.
std::string replay_command(const RunEntry& e, const ContractFinding& f) {
  if (!f.from_file.empty()) return e.case_replay_base + " " + f.from_file;
  return e.replay_base + " --seed " + std::to_string(e.result.seed) + " --cases " +
         std::to_string(f.cases_tried ? f.cases_tried : e.result.cases);
}

}  // namespace

void settle_entry(RunEntry& e) {
  ContractResult& r = e.result;
  for (ContractFinding& f : r.findings) {
    f.target = r.target;
    f.seed = r.seed;
    f.replay = replay_command(e, f);
  }
  if (!e.regression) return;
  r.regression = RegressionResult{e.regression->expect, e.regression->upstream};
  const RegressionVerdict v = regression_verdict(r);
  r.regression->caught_as_expected = v.kind == RegressionVerdict::Caught;
  if (v.kind == RegressionVerdict::NotRun) r.regression->not_run = v.unjudged;
}

bool entry_ok(const RunEntry& e) {
  if (!e.result.regression) return e.result.verdict == Verdict::Pass;
  return e.result.regression->caught_as_expected;
}

namespace {

// "80 caller's mistakes made of the cases (23 of 31 argument/kind pairs), 2 accepted: ...".
std::string misuse_budget_text(const ContractResult& r) {
  std::vector<std::string> accepted;
  for (const ContractFinding& f : r.findings)
    if (f.has_case() && !f.mistake.empty()) add_unique(accepted, f.mistake.text());
  return std::to_string(r.misuse_cases) + " caller's mistakes made of the cases (" + std::to_string(r.mistakes_tried.size()) +
         " of " + std::to_string(r.misuse_pairs_possible) + " argument/kind pairs), " +
         std::to_string(accepted.size()) + " accepted" +
         (accepted.empty() ? "" : ": " + join(accepted));
}

}  // namespace

void print_text_report(std::ostream& out, const std::vector<RunEntry>& run) {
  for (const RunEntry& e : run) {
    const ContractResult& r = e.result;
    // An overload other than the default is named as PyTorch prints it (ns::op.out).
    const std::string overload = e.contract && !e.contract->overload.empty() ? "." + e.contract->overload : "";
    out << "\n== " << (e.regression ? "regression " : "") << r.op << overload;
    if (!r.target.empty() && r.target != r.op) out << "  ->  " << r.target;
    out << ": " << headline(e) << "\n";
    if (e.regression && !e.regression->upstream.empty())
      out << "   " << e.regression->upstream << "\n";
    if (!r.checked.empty()) out << "   checked: " << r.target << ", " << r.checked << "\n";
    if (r.verdict == Verdict::Error) {
      out << "   " << join(r.errors, "\n   ") << "\n";
      // What was found before the error still counts: never drop a counterexample.
      if (r.findings.empty()) continue;
      out << "   found before the error:\n";
    }
    out << "   " << r.file << " - " << r.cases << " cases"
        << (r.replayed ? " (" + std::to_string(r.replayed) + " replayed before the generated ones)" : "") << " - seed "
        << r.seed << "\n";
    out << "   " << std::left << std::setw(13) << "clause";
    for (Mode m : kAllModes) out << std::setw(11) << to_string(m);
    out << "\n";
    for (const ClauseInfo& c : kClauses) {
      if (c.modes.empty()) continue;  // the static clauses: their own lines below
      out << "   " << std::setw(13) << c.id;
      for (Mode m : kAllModes) out << std::setw(11) << cell(r, c.clause, m);
      out << "\n";
    }
    const bool schema_failed = std::any_of(r.findings.begin(), r.findings.end(),
                                           [](const ContractFinding& f) { return f.clause == Clause::Schema; });
    out << "   " << std::setw(13) << "schema" << (schema_failed ? "FAIL" : "pass")
        << " (registered vs contract, once)\n";
    out << "   " << std::setw(13) << "branches";
    if (r.branches.empty()) out << "(none declared)";
    for (size_t i = 0; i < r.branches.size(); ++i)
      out << (i ? ", " : "") << r.branches[i].first << " " << r.branches[i].second;
    out << "\n";
    for (Mode m : kAllModes)
      if (const ModeResult& mr = r.modes.at(m); mr.status == ModeStatus::NotRun)
        out << "   " << to_string(m) << " not run: " << mr.reason << "\n";
      else if (!mr.ran_as.empty())
        out << "   " << to_string(m) << " ran as " << mr.ran_as << "\n";
    if (r.misuse_cases) out << "   misuse: " << misuse_budget_text(r) << "\n";
    else if (!r.misuse_not_run.empty() && !e.regression) out << "   misuse not run: " << r.misuse_not_run << "\n";
    for (const auto& [why, n] : r.declined)
      out << "   declined: " << n << " case(s) the state hook says the program never makes here: " << why << "\n";
    for (const std::string& w : r.warnings) out << "   warning: " << w << "\n";
    if (r.seconds.total > 0) out << "   time: " << time_text(r.seconds) << "\n";
    for (const ContractFinding& f : r.findings) {
      out << "   - " << (f.known.empty() ? "" : "known: ") << f.clause
          << (f.mode ? std::string(" (") + to_string(*f.mode) + ")" : "") << (f.mistake.empty() ? "" : " " + f.mistake.text());
      if (f.has_case() && f.from_file.empty())
        out << ", first in case " << f.cases_tried << ", shrunk in " << f.shrink_steps << " steps";
      else if (f.has_case())
        out << (f.from_file.size() > 6 && f.from_file.compare(f.from_file.size() - 6, 6, ".jsonl") == 0
                    ? ", replaying a call recorded in "
                    : ", replaying the corpus case ")
            << f.from_file;
      std::string message = f.message;
      for (size_t p = 0; (p = message.find('\n', p)) != std::string::npos; p += 8)
        message.insert(p + 1, "       ");
      out << ":\n       " << message << "\n";
      if (f.minimal && e.contract)
        out << "       minimal case: " << describe(*f.minimal, *e.contract) << "\n";
      if (!f.known.empty()) out << "       known because: " << f.known << "\n";
      print_output(out, f.output);
      out << "       replay: " << f.replay << "\n";
    }
    for (const NotApplicable& n : r.not_applicable)
      out << "   - not applicable here: " << n.clause << (n.mode ? std::string(" (") + to_string(*n.mode) + ")" : "") << ": "
          << n.why << "\n       listed because: " << n.reason << "\n";
  }
}

std::string platform_text(const Platform& p) {
  std::ostringstream out;
  out << "judged on: " << (p.arch.empty() ? "an unknown architecture" : p.arch)
      << (p.cpu.empty() ? "" : ", " + p.cpu) << "\n   CPU features: " << isa_summary(p) << "\n   "
      << p.cores << " core" << (p.cores == 1 ? "" : "s") << " usable"
      << (p.threads ? " (ops ran with " + std::to_string(p.threads) + " thread" + (p.threads == 1 ? "" : "s") + " each)" : "")
      << ", ";
  if (p.numa_nodes) out << p.numa_nodes << " NUMA node" << (p.numa_nodes == 1 ? "" : "s");
  else out << "NUMA nodes unknown";
  out << "; settings: ";
  if (p.settings.empty()) out << "none of OMP_*, KMP_*, MKL_*, DNNL_*, VLLM_CPU_*, LD_PRELOAD set";
  for (size_t i = 0; i < p.settings.size(); ++i)
    out << (i ? " " : "") << p.settings[i].first << "=" << p.settings[i].second;
  out << "\n";
  return out.str();
}

std::string json_report(const std::vector<RunEntry>& run, const Platform& platform) {
  std::vector<ContractResult> results;
  for (const RunEntry& e : run) results.push_back(e.result);
  return results_json(results, platform);
}

}  // namespace opc
