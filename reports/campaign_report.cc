#include "reports/campaign_report.h"

#include "support/atomic_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "check/result_json.h"
#include "reports/badge.h"
#include "reports/campaign_pages.h"
#include "reports/junit.h"
#include "support/json_writer.h"
#include "support/names.h"

namespace opc {
namespace {

// ---------------------------------------------------------------------------------------
// Reading: JSON is YAML, so yaml-cpp reads it; every error names the file and the field.

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw ReportError(where + ": " + what); }

YAML::Node field(const YAML::Node& object, const std::string& where, const char* key) {
  const YAML::Node n = object[key];
  if (!n) bad(where, std::string("no '") + key + "'");
  return n;
}

template <class T>
T scalar(const YAML::Node& n, const std::string& where, const char* expected) {
  try {
    if (n.IsScalar()) return n.as<T>();
  } catch (const YAML::Exception&) {
  }
  bad(where, std::string("expected ") + expected);
}

std::string text(const YAML::Node& object, const std::string& where, const char* key) {
  return scalar<std::string>(field(object, where, key), where + "." + key, "a string");
}
// An optional string field: "" when absent.
std::string text_or_empty(const YAML::Node& object, const std::string& where, const char* key) {
  return object[key] ? text(object, where, key) : "";
}
int64_t integer(const YAML::Node& object, const std::string& where, const char* key) {
  return scalar<int64_t>(field(object, where, key), where + "." + key, "an integer");
}

void expect_kind(const YAML::Node& n, YAML::NodeType::value kind, const std::string& where, const char* expected) {
  if (n.Type() != kind) bad(where, std::string("expected ") + expected);
}

std::vector<std::string> strings(const YAML::Node& list, const std::string& where) {
  expect_kind(list, YAML::NodeType::Sequence, where, "a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(scalar<std::string>(list[i], where + "[" + std::to_string(i) + "]", "a string"));
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(path + ": cannot read it (" + std::strerror(errno) + ")");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------
// Merging

int status_rank(ModeStatus s) { return s == ModeStatus::Fail ? 2 : s == ModeStatus::Pass ? 1 : 0; }

void merge_mode(ModeResult& into, const ModeResult& from) {
  if (status_rank(from.status) > status_rank(into.status)) into.status = from.status;
  into.cases += from.cases;
  if (into.reason.empty()) into.reason = from.reason;
  if (into.ran_as.empty()) into.ran_as = from.ran_as;
  if (into.status != ModeStatus::NotRun) into.reason.clear();
  for (const ClauseInfo& c : kClauses)  // the union, in catalogue order
    if (from.judges(c.clause) && !into.judges(c.clause)) into.judged.push_back(c.clause);
  std::sort(into.judged.begin(), into.judged.end());
}

void merge_finding(std::vector<ContractFinding>& into, const ContractFinding& f) {
  auto same = std::find_if(into.begin(), into.end(), [&](const ContractFinding& g) {
    return g.clause == f.clause && g.mode == f.mode && g.mistake == f.mistake && g.target == f.target;
  });
  if (same == into.end()) into.push_back(f);
  else if (f.cases_tried < same->cases_tried) *same = f;
}

bool same_result(const ContractResult& a, const ContractResult& b) {
  return a.file == b.file && a.op == b.op && a.target == b.target && a.checked == b.checked &&
         a.regression.has_value() == b.regression.has_value();
}

// Merges r into the result `same` picks out of `results`, or into a new one at the end.
template <class Same>
void merge_into_matching(std::vector<ContractResult>& results, const ContractResult& r, Same same) {
  auto slot = std::find_if(results.begin(), results.end(), same);
  if (slot == results.end()) {
    results.push_back(empty_result(r.file, r.op, r.target));
    slot = results.end() - 1;
    slot->checked = r.checked;
  }
  merge_into(*slot, r);
}

}  // namespace

void merge_into(ContractResult& into, const ContractResult& from) {
  for (const std::string& e : from.errors) add_unique(into.errors, e);
  into.cases += from.cases;
  if (from.verdict == Verdict::Error) into.verdict = Verdict::Error;
  else if (from.verdict == Verdict::Fail && into.verdict == Verdict::Pass) into.verdict = Verdict::Fail;
  if (!into.regression) into.regression = from.regression;
  else if (from.regression && into.regression->not_run.empty()) into.regression->not_run = from.regression->not_run;
  for (const auto& [mode, m] : from.modes) merge_mode(into.modes[mode], m);
  for (const auto& [name, hits] : from.branches) {
    auto it = std::find_if(into.branches.begin(), into.branches.end(), [&](const auto& b) { return b.first == name; });
    if (it == into.branches.end()) into.branches.emplace_back(name, hits);
    else it->second += hits;
  }
  for (const std::string& w : from.warnings) add_unique(into.warnings, w);
  into.captured_lines += from.captured_lines;
  if (into.misuse_not_run.empty()) into.misuse_not_run = from.misuse_not_run;
  for (const ContractFinding& f : from.findings) merge_finding(into.findings, f);
  for (const NotApplicable& n : from.not_applicable) add_unique(into.not_applicable, n);
  for (const ListedKnown& k : from.known_listed) add_unique(into.known_listed, k);
  // A branch one shard never hit but another did is covered by the campaign.
  std::erase_if(into.findings, [&](const ContractFinding& f) {
    if (f.clause != Clause::Branches) return false;
    for (const auto& [name, hits] : into.branches)
      if (hits > 0 && f.message.rfind("branch '" + name + "'", 0) == 0) return true;
    return false;
  });
}

// A traffic file of `opcontract admit --json`, merged per op.
void add_traffic(Campaign& campaign, const std::string& name, const YAML::Node& doc) {
  const YAML::Node ops = field(doc, name, "ops");
  expect_kind(ops, YAML::NodeType::Sequence, name + ": ops", "a list");
  campaign.files.push_back(name);
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string at = name + ": ops[" + std::to_string(i) + "]";
    expect_kind(ops[i], YAML::NodeType::Map, at, "an object");
    const std::string op = text(ops[i], at, "op");
    auto slot = std::find_if(campaign.traffic.begin(), campaign.traffic.end(),
                             [&](const ReportedTraffic& t) { return t.op == op; });
    if (slot == campaign.traffic.end()) slot = campaign.traffic.insert(campaign.traffic.end(), ReportedTraffic{op});
    slot->calls += integer(ops[i], at, "calls");
    slot->admitted += integer(ops[i], at, "admitted");
    slot->covered |= ops[i]["contract"] && !ops[i]["contract"].IsNull();
    if (slot->not_covered.empty()) slot->not_covered = text_or_empty(ops[i], at, "not_covered");
    if (const YAML::Node rs = ops[i]["rejections"]) {
      expect_kind(rs, YAML::NodeType::Sequence, at + ".rejections", "a list");
      for (size_t k = 0; k < rs.size(); ++k) {
        const std::string rat = at + ".rejections[" + std::to_string(k) + "]";
        const std::string pattern = text(rs[k], rat, "pattern");
        const int64_t calls = integer(rs[k], rat, "calls");
        auto same = std::find_if(slot->rejections.begin(), slot->rejections.end(),
                                 [&](const auto& r) { return r.first == pattern; });
        if (same == slot->rejections.end()) slot->rejections.emplace_back(pattern, calls);
        else same->second += calls;
      }
    }
  }
}

void add_results(Campaign& campaign, const std::string& name, const std::string& json) {
  YAML::Node doc;
  try {
    doc = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    throw ReportError(name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": not valid JSON: " + e.msg);
  }
  if (doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() && doc["kind"].Scalar() == "traffic") {
    add_traffic(campaign, name, doc);
    return;
  }
  ResultsFile file;
  try {
    file = read_results_json(json, name);
  } catch (const ResultsError& e) {
    throw ReportError(e.what());
  }
  campaign.files.push_back(name);
  if (!file.platform.empty()) campaign.platforms.emplace_back(name, file.platform);
  for (const ContractResult& r : file.results)
    merge_into_matching(campaign.results, r, [&](const ContractResult& s) { return same_result(s, r); });
}

Campaign read_campaign(const std::vector<std::string>& paths) {
  Campaign c;
  for (const std::string& p : paths) add_results(c, p, read_text(p));
  return c;
}

const ReportedTraffic* traffic_of(const Campaign& c, const std::string& op) {
  for (const ReportedTraffic& t : c.traffic)
    if (t.op == op) return &t;
  return nullptr;
}

std::string checked_label(const ContractResult& r) {
  return r.checked.empty() ? r.target : r.target + " (" + r.checked + ")";
}

std::vector<ContractResult> op_results(const Campaign& campaign) {
  std::vector<ContractResult> ops;
  for (const ContractResult& r : campaign.results) {
    if (!r.regression)
      merge_into_matching(ops, r,
                          [&](const ContractResult& o) { return o.target == r.target && o.checked == r.checked; });
  }
  // Found by name on the pages, whatever order the result files came in.
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return std::tie(a.target, a.checked) < std::tie(b.target, b.checked);
  });
  for (ContractResult& op : ops) {
    const bool several =
        std::count_if(ops.begin(), ops.end(), [&](const auto& o) { return o.target == op.target; }) > 1;
    op.id = sanitized_op_name(op.target) + (several ? "--" + sanitized_op_name(op.checked) : "");
  }
  return ops;
}

std::vector<const ContractResult*> regression_results(const Campaign& campaign) {
  std::vector<const ContractResult*> out;
  for (const ContractResult& r : campaign.results)
    if (r.regression) out.push_back(&r);
  return out;
}

ModeVerdict mode_verdict(const ContractResult& r, Mode m) {
  const ModeStatus status = r.modes.at(m).status;
  if (status == ModeStatus::NotRun) return ModeVerdict::NotRun;
  if (status == ModeStatus::Pass) return ModeVerdict::Pass;
  const bool breaks = std::any_of(r.findings.begin(), r.findings.end(), [&](const ContractFinding& f) {
    return f.mode == m && f.known.empty() && f.clause != Clause::Misuse;
  });
  return breaks ? ModeVerdict::Fail : ModeVerdict::Known;
}

ModeVerdict misuse_verdict(const ContractResult& r) {
  const bool judged = std::any_of(r.modes.begin(), r.modes.end(), [](const auto& m) {
    return m.second.status != ModeStatus::NotRun && m.second.judges(Clause::Misuse);
  });
  if (!judged) return ModeVerdict::NotRun;
  bool known = false;
  for (const ContractFinding& f : r.findings) {
    if (f.clause != Clause::Misuse) continue;
    if (f.known.empty()) return ModeVerdict::Fail;
    known = true;
  }
  return known ? ModeVerdict::Known : ModeVerdict::Pass;
}

const char* to_string(ModeVerdict v) {
  switch (v) {
    case ModeVerdict::Pass:
      return "pass";
    case ModeVerdict::Known:
      return "known";
    case ModeVerdict::Fail:
      return "FAIL";
    case ModeVerdict::NotRun:
      return "not run";
  }
  return "?";
}

const ContractFinding* first_failure(const ContractResult& r) {
  for (const ContractFinding& f : r.findings)
    if (f.known.empty()) return &f;
  return nullptr;
}

std::vector<std::string> failed_clauses(const ContractResult& r) {
  std::vector<std::string> out;
  for (const ContractFinding& f : r.findings)
    add_unique(out, to_string(f.clause) + (f.known.empty() ? "" : " (known)"));
  return out;
}

RegressionRow regression_row(const ContractResult& r) {
  if (!r.errors.empty()) return {RegressionVerdict::Error, "error: " + join(r.errors, "; ")};
  const RegressionVerdict v = regression_verdict(r);
  const std::string found = clause_names(v.found), expect = clause_names(r.regression->expect);
  switch (v.kind) {
    case RegressionVerdict::NotRun:
      return {v.kind,
              "not run: no mode that ran judges " + expect + (v.unjudged.empty() ? "" : " (" + v.unjudged + ")")};
    case RegressionVerdict::Caught:
      return {v.kind, "caught by " + found + ", as expected"};
    default:
      if (v.found.empty()) return {v.kind, "NOT CAUGHT (expected " + expect + ")"};
      return {v.kind, "caught by " + found + ", but expected exactly " + clause_names(v.judged_expected)};
  }
}

std::string sanitized_op_name(const std::string& op) {
  std::string out;
  for (char c : op) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (keep) out += c;
    else if (out.empty() || out.back() != '-') out += '-';
  }
  return out;
}

void write_campaign_report(const Campaign& campaign, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "badges", ec);
  if (ec) throw ReportError("--out " + dir + ": cannot create the folder (" + ec.message() + ")");
  const fs::path out(dir);
  write_file_atomically((out / "summary.md").string(), summary_markdown(campaign));
  write_file_atomically((out / "junit.xml").string(), junit_xml(campaign));
  write_file_atomically((out / "index.html").string(), dashboard_html(campaign));
  for (const ContractResult& op : op_results(campaign)) {
    const Badge b = op_badge(op);
    const fs::path stem = out / "badges" / op.id;
    write_file_atomically(stem.string() + ".svg", badge_svg(b));
    write_file_atomically(stem.string() + ".json", badge_endpoint_json(b));
  }
}

}  // namespace opc
