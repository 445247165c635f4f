#include "check/result.h"

#include <algorithm>

namespace opc {
namespace {

constexpr const char* kVerdicts[] = {"pass", "fail", "error"};
constexpr const char* kStatuses[] = {"pass", "fail", "not_run"};

template <class E, size_t N>
std::optional<E> named(std::string_view name, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

const char* to_string(Verdict v) { return kVerdicts[static_cast<size_t>(v)]; }
const char* to_string(ModeStatus s) { return kStatuses[static_cast<size_t>(s)]; }
std::optional<Verdict> verdict_named(std::string_view name) { return named<Verdict>(name, kVerdicts); }
std::optional<ModeStatus> mode_status_named(std::string_view name) { return named<ModeStatus>(name, kStatuses); }

bool ModeResult::judges(Clause c) const { return std::find(judged.begin(), judged.end(), c) != judged.end(); }

ContractResult empty_result(const std::string& file, const std::string& op, const std::string& target) {
  ContractResult r;
  r.file = file;
  r.op = op;
  r.target = target;
  for (Mode m : kAllModes) r.modes[m] = {};
  return r;
}

bool lists(const KnownFinding& k, const ContractFinding& f) {
  return f.clause == k.clause && (!k.mode || f.mode == k.mode) && f.mistake == k.mistake;
}

std::vector<Clause> found_clauses(const ContractResult& r) {
  std::vector<Clause> out;
  for (const ClauseInfo& c : kClauses)
    if (std::any_of(r.findings.begin(), r.findings.end(), [&](const ContractFinding& f) { return f.clause == c.clause; }))
      out.push_back(c.clause);
  return out;
}

Verdict verdict_of(const ContractResult& r) {
  return std::all_of(r.findings.begin(), r.findings.end(), [](const ContractFinding& f) { return !f.known.empty(); })
             ? Verdict::Pass
             : Verdict::Fail;
}

std::string clause_names(const std::vector<Clause>& clauses) {
  std::string s;
  for (Clause c : clauses) s += (s.empty() ? "" : ", ") + to_string(c);
  return s;
}

namespace {

// Whether some mode judges the clause for the contract, and whether one that did ran;
// static clauses (schema, branches) belong to no mode and are always judged.
bool judged_by_a_mode_that_ran(const ContractResult& r, Clause c, std::string& why_not) {
  bool listed = false;
  for (const auto& [mode, m] : r.modes) {
    if (!m.judges(c)) continue;
    listed = true;
    if (m.status != ModeStatus::NotRun) return true;
    why_not = std::string(to_string(mode)) + " not run: " + m.reason;
  }
  return !listed;
}

}  // namespace

RegressionVerdict regression_verdict(const ContractResult& r) {
  RegressionVerdict v{RegressionVerdict::Error, found_clauses(r), {}, ""};
  std::vector<std::string> whys;
  for (const ClauseInfo& c : kClauses) {
    if (std::find(r.regression->expect.begin(), r.regression->expect.end(), c.clause) == r.regression->expect.end())
      continue;
    std::string why;
    if (judged_by_a_mode_that_ran(r, c.clause, why)) v.judged_expected.push_back(c.clause);
    else if (std::find(whys.begin(), whys.end(), why) == whys.end()) whys.push_back(why);
  }
  for (const std::string& w : whys) v.unjudged += (v.unjudged.empty() ? "" : "; ") + w;
  if (r.verdict == Verdict::Error) return v;
  if (v.judged_expected.empty() && v.found.empty()) v.kind = RegressionVerdict::NotRun;
  else if (!v.judged_expected.empty() && v.found == v.judged_expected) v.kind = RegressionVerdict::Caught;
  else v.kind = RegressionVerdict::Missed;
  return v;
}

}  // namespace opc
