#include "reports/run_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "support/json_writer.h"
#include "support/names.h"
#include "support/output_capture.h"

namespace opc {
namespace {

// Clauses judged per case, in the order the table shows them, and the modes judging each.
struct ClauseRow {
  const char* clause;
  std::vector<Mode> modes;
};
const ClauseRow kCaseClauses[] = {
    {"alias", {Mode::Eager, Mode::Fake}},  {"mutation", {Mode::Eager}}, {"write", {Mode::Eager}},
    {"extent", {Mode::Eager}}, {"crash", {Mode::Eager, Mode::Cudagraph}}, {"fake", {Mode::Fake}},
    {"padding", {Mode::Eager, Mode::Compiled}}, {"determinism", {Mode::Eager}}, {"compiled", {Mode::Compiled}},
    {"cudagraph", {Mode::Cudagraph}}, {"precondition", {Mode::Eager}}, {"reference", {Mode::Eager}},
    {"donation", {Mode::Eager, Mode::Compiled}}, {"misuse", {Mode::Eager}}, {"finite", {Mode::Eager}},
    {"forms", {Mode::Eager}},
};

bool mode_ran(const ContractResult& r, Mode m) {
  auto it = r.modes.find(m);
  return it != r.modes.end() && it->second.status != "not_run";
}

bool judges(const RunEntry& e, const ClauseRow& row, Mode m);

// An expected clause that no mode of this run could judge, with the reason.
std::vector<std::pair<std::string, std::string>> unjudged(const RunEntry& e) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& clause : e.regression->expect)
    for (const ClauseRow& row : kCaseClauses) {
      if (clause != row.clause) continue;
      std::string why;
      bool judged = false;
      for (Mode m : row.modes) {
        if (!judges(e, row, m)) continue;
        judged |= mode_ran(e.result, m);
        if (auto it = e.result.modes.find(m); it != e.result.modes.end() && !mode_ran(e.result, m))
          why = std::string(to_string(m)) + " not run: " + it->second.reason;
      }
      if (!judged) out.emplace_back(clause, why);
    }
  return out;
}

// The expected clauses this run could judge, sorted and unique.
std::vector<std::string> judged_expectations(const RunEntry& e) {
  std::vector<std::string> want;
  const auto skipped = unjudged(e);
  for (const std::string& c : e.regression->expect)
    if (std::none_of(skipped.begin(), skipped.end(), [&](const auto& s) { return s.first == c; }))
      want.push_back(c);
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  return want;
}

std::string unjudged_text(const RunEntry& e) {
  std::vector<std::string> whys;
  for (const auto& [clause, why] : unjudged(e))
    if (std::find(whys.begin(), whys.end(), why) == whys.end()) whys.push_back(why);
  return join(whys, "; ");
}

bool found(const ContractResult& r, const std::string& clause, const std::string& mode) {
  for (const auto& f : r.findings)
    if (f.clause == clause && f.mode == mode) return true;
  return false;
}

// Whether mode m judges the row's clause for this contract.
// Whether the contract states a precondition: a requires:, or an in-place aliasing it calls
// unsupported (the op must refuse it).
bool has_precondition(const Contract& c) {
  return !c.requires_.empty() ||
         std::any_of(c.inplace.begin(), c.inplace.end(), [](const auto& i) { return !i.supported; });
}

bool has_forms(const Contract& c) {
  return std::any_of(c.args.begin(), c.args.end(), [](const ArgSpec& a) { return !a.forms.empty(); });
}

// Whether the contract asks for a clause only some contracts state.
bool asks_for(const Contract& c, const std::string& clause) {
  if (clause == "reference") return !c.reference.empty();
  if (clause == "precondition") return has_precondition(c);
  if (clause == "padding") return static_cast<bool>(c.padding);
  if (clause == "donation") return static_cast<bool>(c.donates);
  if (clause == "finite") return c.finite;
  if (clause == "forms") return has_forms(c);
  return true;
}

bool judges(const RunEntry& e, const ClauseRow& row, Mode m) {
  if (std::find(row.modes.begin(), row.modes.end(), m) == row.modes.end()) return false;
  // The fake mode judges aliasing only for an op that cannot run (its contract skips eager).
  if (row.clause == std::string("alias") && m == Mode::Fake && !(e.contract && e.contract->skip.count(Mode::Eager)))
    return false;
  if (e.contract && !asks_for(*e.contract, row.clause)) return false;
  // Caller's mistakes are judged only where some were made.
  return !(row.clause == std::string("misuse") && e.result.misuse_cases == 0);
}

std::string cell(const RunEntry& e, const ClauseRow& row, Mode m) {
  const ContractResult& r = e.result;
  if (!judges(e, row, m)) return "-";
  const std::string clause = row.clause;
  auto it = r.modes.find(m);
  if (it == r.modes.end() || it->second.status == "not_run") return "not run";
  return found(r, clause, to_string(m)) ? "FAIL" : "pass";
}

std::string headline(const RunEntry& e) {
  const ContractResult& r = e.result;
  if (r.verdict == "error") return "ERROR";
  if (!e.regression) {
    const auto known = std::count_if(r.findings.begin(), r.findings.end(),
                                     [](const ContractFinding& f) { return !f.known.empty(); });
    if (r.verdict != "pass") return "FAILS";
    const size_t elsewhere = r.not_applicable.size();
    const std::string scoped =
        elsewhere ? std::to_string(elsewhere) + " not applicable here" : std::string();
    if (!known) return elsewhere ? "HOLDS (known_findings: " + scoped + ")" : "HOLDS";
    return "HOLDS, with " + std::to_string(known) + " known finding" + (known > 1 ? "s" : "") +
           " (known_findings" + (elsewhere ? "; " + scoped : "") + ")";
  }
  const std::string by = join(found_clauses(r));
  if (regression_not_run(e))
    return "NOT RUN: it must be caught by " + join(e.regression->expect) + ", which no mode of "
           "this run judges (" + unjudged_text(e) + ")";
  if (caught_as_expected(e))
    return "CAUGHT by " + by + ", as expected" +
           (unjudged(e).empty() ? "" : " (not judged here: " + unjudged_text(e) + ")");
  if (by.empty()) return "NOT CAUGHT (expected: " + join(e.regression->expect) + ")";
  return "CAUGHT by " + by + ", but expected exactly " + join(e.regression->expect);
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

}  // namespace

bool caught_as_expected(const RunEntry& e) {
  if (!e.regression || e.result.verdict == "error") return false;
  const std::vector<std::string> want = judged_expectations(e);
  return !want.empty() && found_clauses(e.result) == want;
}

bool regression_not_run(const RunEntry& e) {
  return e.regression && e.result.verdict != "error" && judged_expectations(e).empty() &&
         found_clauses(e.result).empty();
}

bool entry_ok(const RunEntry& e) {
  return e.regression ? caught_as_expected(e) : e.result.verdict == "pass";
}

std::string replay_command(const RunEntry& e, const ContractFinding& f) {
  if (!f.from_file.empty()) return e.case_replay_base + " " + f.from_file;
  return e.replay_base + " --seed " + std::to_string(e.result.seed) + " --cases " +
         std::to_string(f.cases_tried ? f.cases_tried : e.result.cases);
}

namespace {

// "80 caller's mistakes made of the cases (23 of 31 argument/kind pairs), 2 accepted: ...".
std::string misuse_budget_text(const ContractResult& r) {
  std::vector<std::string> accepted;
  for (const ContractFinding& f : r.findings)
    if (f.has_case && !f.mistake.empty()) add_unique(accepted, f.mistake.text());
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
    if (r.verdict == "error") {
      out << "   " << r.error << "\n";
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
    for (const ClauseRow& row : kCaseClauses) {
      out << "   " << std::setw(13) << row.clause;
      for (Mode m : kAllModes) out << std::setw(11) << cell(e, row, m);
      out << "\n";
    }
    out << "   " << std::setw(13) << "schema" << (found(r, "schema", "") ? "FAIL" : "pass")
        << " (registered vs contract, once)\n";
    out << "   " << std::setw(13) << "branches";
    if (r.branches.empty()) out << "(none declared)";
    for (size_t i = 0; i < r.branches.size(); ++i)
      out << (i ? ", " : "") << r.branches[i].first << " " << r.branches[i].second;
    out << "\n";
    for (Mode m : kAllModes)
      if (const ModeResult& mr = r.modes.at(m); mr.status == "not_run")
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
          << (f.mode.empty() ? "" : " (" + f.mode + ")") << (f.mistake.empty() ? "" : " " + f.mistake.text());
      if (f.has_case && f.from_file.empty())
        out << ", first in case " << f.cases_tried << ", shrunk in " << f.shrink_steps << " steps";
      else if (f.has_case)
        out << (f.from_file.size() > 6 && f.from_file.compare(f.from_file.size() - 6, 6, ".jsonl") == 0
                    ? ", replaying a call recorded in "
                    : ", replaying the corpus case ")
            << f.from_file;
      std::string message = f.message;
      for (size_t p = 0; (p = message.find('\n', p)) != std::string::npos; p += 8)
        message.insert(p + 1, "       ");
      out << ":\n       " << message << "\n";
      if (f.has_case && e.contract)
        out << "       minimal case: " << describe(f.minimal, *e.contract) << "\n";
      if (!f.known.empty()) out << "       known because: " << f.known << "\n";
      print_output(out, f.output);
      out << "       replay: " << replay_command(e, f) << "\n";
    }
    for (const NotApplicable& n : r.not_applicable)
      out << "   - not applicable here: " << n.clause << (n.mode.empty() ? "" : " (" + n.mode + ")") << ": "
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

namespace {

// Seconds to the millisecond: a profile, not a benchmark.
double to_ms(double s) { return std::round(s * 1000) / 1000; }

void write_seconds(JsonWriter& w, const TimeSpent& t) {
  w.key("seconds").begin_object();
  w.key("total").value(to_ms(t.total)).key("cases").value(to_ms(t.cases));
  for (const auto& [m, s] : t.modes) w.key(to_string(m)).value(to_ms(s));
  w.key("misuse").value(to_ms(t.misuse)).key("shrinking").value(to_ms(t.shrinking));
  w.end_object();
}

void write_regression(JsonWriter& w, const RunEntry& e) {
  w.key("regression").begin_object();
  w.key("expect").begin_array();
  for (const auto& c : e.regression->expect) w.value(c);
  w.end_array();
  w.key("upstream").value(e.regression->upstream);
  w.key("caught_as_expected").value(caught_as_expected(e));
  if (regression_not_run(e)) w.key("not_run").value(unjudged_text(e));
  w.end_object();
}

void write_modes(JsonWriter& w, const RunEntry& e) {
  w.key("modes").begin_object();
  for (const auto& [mode, mr] : e.result.modes) {
    w.key(to_string(mode)).begin_object();
    w.key("status").value(mr.status);
    w.key("cases").value(mr.cases);
    if (!mr.reason.empty()) w.key("reason").value(mr.reason);
    if (!mr.ran_as.empty() && mr.status != "not_run") w.key("ran_as").value(mr.ran_as);
    // What the mode judges, so that a merge of results (opcontract report) can tell an
    // expected clause no mode ran from one that was missed.
    w.key("clauses").begin_array();
    for (const ClauseRow& row : kCaseClauses)
      if (judges(e, row, mode)) w.value(row.clause);
    w.end_array();
    w.end_object();
  }
  w.end_object();
}

void write_finding(JsonWriter& w, const RunEntry& e, const ContractFinding& f) {
  w.begin_object();
  w.key("clause").value(f.clause);
  w.key("mode").value(f.mode);
  if (!f.mistake.empty()) w.key("mistake").begin_object().key("arg").value(f.mistake.arg).key("kind").value(f.mistake.kind).end_object();
  w.key("message").value(f.message);
  if (f.has_case && e.contract) w.key("case").raw(case_json(f.minimal, *e.contract));
  w.key("seed").value(e.result.seed);
  w.key("cases_tried").value(f.cases_tried);
  w.key("shrink_steps").value(f.shrink_steps);
  if (!f.from_file.empty()) w.key("from_file").value(f.from_file);
  if (!f.known.empty()) w.key("known").value(f.known);
  if (!f.output.empty()) w.key("output").value(f.output);
  w.key("replay").value(replay_command(e, f));
  w.end_object();
}

void write_entry(JsonWriter& w, const RunEntry& e) {
  const ContractResult& r = e.result;
  w.begin_object();
  w.key("file").value(r.file);
  w.key("op").value(r.op);
  w.key("target").value(r.target);
  if (!r.checked.empty()) w.key("checked").value(r.checked);
  w.key("verdict").value(r.verdict);
  if (!r.error.empty()) w.key("error").value(r.error);
  w.key("seed").value(r.seed);
  w.key("cases").value(r.cases);
  if (r.misuse_cases)
    w.key("misuse_cases").value(r.misuse_cases).key("misuse_pairs").value(static_cast<int64_t>(r.mistakes_tried.size()))
        .key("misuse_pairs_possible").value(r.misuse_pairs_possible);
  if (!r.misuse_not_run.empty()) w.key("misuse_not_run").value(r.misuse_not_run);
  if (!r.declined.empty()) {
    w.key("declined").begin_object();
    for (const auto& [why, n] : r.declined) w.key(why).value(n);
    w.end_object();
  }
  if (e.regression) write_regression(w, e);
  write_modes(w, e);
  w.key("branches").begin_object();
  for (const auto& [name, hits] : r.branches) w.key(name).value(hits);
  w.end_object();
  w.key("warnings").begin_array();
  for (const std::string& warning : r.warnings) w.value(warning);
  w.end_array();
  if (r.captured_lines) w.key("captured_lines").value(r.captured_lines);
  write_seconds(w, r.seconds);
  w.key("findings").begin_array();
  for (const ContractFinding& f : r.findings) write_finding(w, e, f);
  w.end_array();
  if (!r.not_applicable.empty()) {
    w.key("not_applicable").begin_array();
    for (const NotApplicable& n : r.not_applicable)
      w.begin_object().key("clause").value(n.clause).key("mode").value(n.mode).key("reason").value(n.reason)
          .key("why").value(n.why).end_object();
    w.end_array();
  }
  if (!r.known_listed.empty()) {
    w.key("known_listed").begin_array();
    for (const ListedKnown& k : r.known_listed)
      w.begin_object().key("clause").value(k.clause).key("mode").value(k.mode).key("where").value(k.where)
          .key("sometimes").value(k.sometimes).end_object();
    w.end_array();
  }
  w.end_object();
}

void write_platform(JsonWriter& w, const Platform& p) {
  const auto [present, absent] = isa_features(p);
  w.key("platform").begin_object();
  w.key("arch").value(p.arch).key("cpu").value(p.cpu);
  w.key("cpu_features").begin_array();
  for (const std::string& f : present) w.value(f);
  w.end_array();
  w.key("cpu_features_absent").begin_array();
  for (const std::string& f : absent) w.value(f);
  w.end_array();
  w.key("cores").value(p.cores).key("numa_nodes").value(p.numa_nodes);
  if (p.threads) w.key("threads").value(p.threads);
  w.key("settings").begin_object();
  for (const auto& [name, value] : p.settings) w.key(name).value(value);
  w.end_object();
  w.end_object();
}

}  // namespace

std::string json_report(const std::vector<RunEntry>& run, const Platform& platform) {
  JsonWriter w;
  w.begin_object().key("version").value(1);
  write_platform(w, platform);
  w.key("contracts").begin_array();
  for (const RunEntry& e : run) write_entry(w, e);
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace opc
