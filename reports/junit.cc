#include "reports/junit.h"

#include <algorithm>

#include "reports/markup.h"
#include "support/names.h"

namespace opc {
namespace {

struct TestCase {
  enum Outcome { Pass, Failure, Skipped, Error };
  std::string name;
  Outcome outcome = Pass;
  std::string message;  // the failure's, error's or skip's message attribute
  std::string type;     // the failure's type: the clause
  std::string body;     // the element's text; for a pass, its <system-out> ("" for none)
};

std::string finding_text(const ContractFinding& f) {
  std::string t = f.message;
  if (!f.case_json.empty()) t += "\nminimal case: " + f.case_json;
  return t + "\nreplay: " + f.replay;
}

// The clause in one mode (none and no result for a static clause).
TestCase clause_case(const ContractResult& r, Clause clause, const std::optional<Mode>& mode, const ModeResult* result) {
  TestCase t{to_string(clause) + mode_note(mode)};
  if (result && result->status == ModeStatus::NotRun) {
    t.outcome = TestCase::Skipped;
    t.message = result->reason.empty() ? "no result file ran this mode" : result->reason;
    return t;
  }
  for (const ContractFinding& f : r.findings) {
    if (f.clause != clause || f.mode != mode) continue;
    if (!f.known.empty()) {
      t.body = "known finding (" + f.known + "): " + finding_text(f);
      continue;
    }
    t.outcome = TestCase::Failure;
    t.message = f.message;
    t.type = to_string(clause);
    t.body = finding_text(f);
  }
  return t;
}

// `base`, then the clauses of findings in `mode` that it lacks.
std::vector<Clause> clauses_in(const ContractResult& r, const std::optional<Mode>& mode, std::vector<Clause> base) {
  for (const ContractFinding& f : r.findings)
    if (f.mode == mode && std::find(base.begin(), base.end(), f.clause) == base.end()) base.push_back(f.clause);
  return base;
}

std::vector<TestCase> contract_cases(const ContractResult& r) {
  const bool ran = std::any_of(r.modes.begin(), r.modes.end(),
                               [](const auto& m) { return m.second.status != ModeStatus::NotRun; });
  // The schema is compared once the target binds, which every mode that ran needs.
  std::vector<Clause> statics;
  if (ran) statics.push_back(Clause::Schema);
  if (!r.branches.empty()) statics.push_back(Clause::Branches);
  std::vector<TestCase> out;
  for (Clause c : clauses_in(r, std::nullopt, statics)) out.push_back(clause_case(r, c, std::nullopt, nullptr));
  for (Mode m : kAllModes) {
    const ModeResult& result = r.modes.at(m);
    for (Clause c : clauses_in(r, m, result.judged)) out.push_back(clause_case(r, c, m, &result));
  }
  return out;
}

TestCase regression_case(const ContractResult& r) {
  const RegressionRow v = regression_row(r);
  TestCase t{"caught by exactly " + clause_names(r.regression->expect)};
  if (v.kind == RegressionVerdict::NotRun) t.outcome = TestCase::Skipped;
  if (v.kind == RegressionVerdict::Missed) t.outcome = TestCase::Failure;
  t.message = v.text;
  t.type = "regression";
  for (const ContractFinding& f : r.findings) t.body += to_string(f.clause) + mode_note(f.mode) + ": " + finding_text(f) + "\n";
  return t;
}

std::vector<TestCase> suite_cases(const ContractResult& r) {
  std::vector<TestCase> out;
  for (const std::string& e : r.errors) out.push_back({"check", TestCase::Error, e});
  if (!r.regression) {
    const std::vector<TestCase> clauses = contract_cases(r);
    out.insert(out.end(), clauses.begin(), clauses.end());
  } else if (r.errors.empty()) {
    out.push_back(regression_case(r));
  }
  return out;
}

std::string testcase_xml(const TestCase& t, const std::string& classname) {
  std::string x = "    <testcase name=\"" + xml_escape(t.name) + "\" classname=\"" + xml_escape(classname) +
                  "\" time=\"0\"";
  static const char* const kElement[] = {nullptr, "failure", "skipped", "error"};
  const char* element = kElement[t.outcome];
  if (!element && t.body.empty()) return x + "/>\n";
  x += ">\n      ";
  if (!element) return x + "<system-out>" + xml_escape(t.body) + "</system-out>\n    </testcase>\n";
  x += std::string("<") + element + " message=\"" + xml_escape(t.message) + "\"";
  if (!t.type.empty()) x += " type=\"" + xml_escape(t.type) + "\"";
  return x + ">" + xml_escape(t.body) + "</" + element + ">\n    </testcase>\n";
}

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
};

Counts count(const std::vector<TestCase>& cases) {
  Counts n;
  n.tests = cases.size();
  for (const TestCase& t : cases) {
    n.failures += t.outcome == TestCase::Failure;
    n.errors += t.outcome == TestCase::Error;
    n.skipped += t.outcome == TestCase::Skipped;
  }
  return n;
}

std::string attr(const char* name, size_t n) { return std::string(" ") + name + "=\"" + std::to_string(n) + "\""; }

}  // namespace

std::string junit_xml(const Campaign& campaign) {
  std::string suites;
  Counts total;
  for (const ContractResult& r : campaign.results) {
    const std::vector<TestCase> cases = suite_cases(r);
    const Counts n = count(cases);
    // Apart from a plain check of the same target (check --target T).
    const std::string name = (r.regression ? "regression " : "") + r.target;
    total.tests += n.tests;
    total.failures += n.failures;
    total.errors += n.errors;
    suites += "  <testsuite name=\"" + xml_escape(name) + "\"" + attr("tests", n.tests) +
              attr("failures", n.failures) + attr("errors", n.errors) + attr("skipped", n.skipped) +
              " time=\"0\" file=\"" + xml_escape(r.file) + "\">\n";
    for (const TestCase& t : cases) suites += testcase_xml(t, name);
    suites += "  </testsuite>\n";
  }
  // junit-10.xsd gives <testsuites> no skipped attribute; each <testsuite> has its own.
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"opcontract\"" +
         attr("tests", total.tests) + attr("failures", total.failures) + attr("errors", total.errors) +
         " time=\"0\">\n" + suites + "</testsuites>\n";
}

}  // namespace opc
