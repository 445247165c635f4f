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
#include <tuple>
#include <sstream>

#include "reports/badge.h"
#include "reports/campaign_pages.h"
#include "reports/junit.h"
#include "support/json_writer.h"
#include "support/names.h"

namespace opc {
namespace {

// ---------------------------------------------------------------------------------------
// Reading: JSON is YAML, so yaml-cpp reads it; every error names the file and the field.

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw ReportError(where + ": " + what);
}

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

void expect_kind(const YAML::Node& n, YAML::NodeType::value kind, const std::string& where,
                 const char* expected) {
  if (n.Type() != kind) bad(where, std::string("expected ") + expected);
}

std::vector<std::string> strings(const YAML::Node& list, const std::string& where) {
  expect_kind(list, YAML::NodeType::Sequence, where, "a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(scalar<std::string>(list[i], where + "[" + std::to_string(i) + "]", "a string"));
  return out;
}

// Writes a JSON value read by yaml-cpp back as JSON. Quoted scalars (tag "!") are strings;
// plain ones are the document's numbers, true, false and null, kept as written.
void write_json(JsonWriter& w, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      w.begin_array();
      for (const YAML::Node& item : n) write_json(w, item);
      w.end_array();
      return;
    case YAML::NodeType::Map:
      w.begin_object();
      for (const auto& kv : n) {
        w.key(kv.first.Scalar());
        write_json(w, kv.second);
      }
      w.end_object();
      return;
    case YAML::NodeType::Scalar:
      if (n.Tag() == "!") w.value(n.Scalar());
      else w.raw(n.Scalar());
      return;
    default:
      w.null();
  }
}

ReportedFinding parse_finding(const YAML::Node& f, const std::string& where, const std::string& target) {
  ReportedFinding out;
  out.clause = text(f, where, "clause");
  out.mode = text(f, where, "mode");
  out.target = target;
  out.message = text(f, where, "message");
  if (const YAML::Node m = f["mistake"]) {
    expect_kind(m, YAML::NodeType::Map, where + ".mistake", "an object");
    out.mistake = {text(m, where + ".mistake", "arg"), text(m, where + ".mistake", "kind")};
  }
  if (f["case"]) {
    JsonWriter w;
    write_json(w, f["case"]);
    out.case_json = w.str();
  }
  out.seed = scalar<uint64_t>(field(f, where, "seed"), where + ".seed", "an unsigned integer");
  out.cases_tried = integer(f, where, "cases_tried");
  out.shrink_steps = integer(f, where, "shrink_steps");
  out.known = text_or_empty(f, where, "known");
  out.output = text_or_empty(f, where, "output");
  out.replay = text(f, where, "replay");
  return out;
}

ModeOutcome parse_mode_outcome(const YAML::Node& m, const std::string& where) {
  expect_kind(m, YAML::NodeType::Map, where, "an object");
  ModeOutcome out;
  out.status = text(m, where, "status");
  if (out.status != "pass" && out.status != "fail" && out.status != "not_run")
    bad(where + ".status", "'" + out.status + "' is none of pass, fail, not_run");
  out.cases = integer(m, where, "cases");
  out.reason = text_or_empty(m, where, "reason");
  out.ran_as = text_or_empty(m, where, "ran_as");
  // Needed to tell a regression's expected clause that no mode could judge (the cudagraph
  // clause without a GPU) from one that was missed.
  out.clauses = strings(field(m, where, "clauses"), where + ".clauses");
  return out;
}

ReportedResult empty_result(const std::string& file, const std::string& op, const std::string& target) {
  ReportedResult r;
  r.file = file;
  r.op = op;
  r.target = target;
  for (Mode m : kAllModes) r.modes[m] = {};
  return r;
}

ReportedResult parse_result(const YAML::Node& c, const std::string& where) {
  expect_kind(c, YAML::NodeType::Map, where, "an object");
  ReportedResult r = empty_result(text(c, where, "file"), text(c, where, "op"), text(c, where, "target"));
  r.checked = text_or_empty(c, where, "checked");
  if (text(c, where, "verdict") == "error") r.errors.push_back(text(c, where, "error"));
  r.cases = integer(c, where, "cases");
  if (const YAML::Node g = c["regression"]) {
    const std::string at = where + ".regression";
    expect_kind(g, YAML::NodeType::Map, at, "an object");
    r.regression = ReportedRegression{strings(field(g, at, "expect"), at + ".expect"),
                                      text_or_empty(g, at, "upstream"), text_or_empty(g, at, "not_run")};
  }
  const YAML::Node modes = field(c, where, "modes");
  expect_kind(modes, YAML::NodeType::Map, where + ".modes", "an object");
  for (const auto& kv : modes) {
    const std::string name = kv.first.Scalar(), at = where + ".modes." + name;
    const std::optional<Mode> m = parse_mode(name);
    if (!m) bad(at, "unknown mode (modes: fake, eager, compiled, cudagraph)");
    r.modes[*m] = parse_mode_outcome(kv.second, at);
  }
  if (const YAML::Node b = c["branches"]) {
    expect_kind(b, YAML::NodeType::Map, where + ".branches", "an object");
    for (const auto& kv : b)
      r.branches.emplace_back(kv.first.Scalar(), scalar<int64_t>(kv.second, where + ".branches." + kv.first.Scalar(),
                                                                 "an integer"));
  }
  if (c["warnings"]) r.warnings = strings(c["warnings"], where + ".warnings");
  if (c["captured_lines"]) r.captured_lines = integer(c, where, "captured_lines");
  r.misuse_not_run = text_or_empty(c, where, "misuse_not_run");
  if (const YAML::Node na = c["not_applicable"]) {
    expect_kind(na, YAML::NodeType::Sequence, where + ".not_applicable", "a list");
    for (size_t i = 0; i < na.size(); ++i) {
      const std::string at = where + ".not_applicable[" + std::to_string(i) + "]";
      expect_kind(na[i], YAML::NodeType::Map, at, "an object");
      r.not_applicable.push_back({text(na[i], at, "clause"), text_or_empty(na[i], at, "mode"),
                                  text(na[i], at, "reason"), text(na[i], at, "why")});
    }
  }
  if (const YAML::Node kl = c["known_listed"]) {
    expect_kind(kl, YAML::NodeType::Sequence, where + ".known_listed", "a list");
    for (size_t i = 0; i < kl.size(); ++i) {
      const std::string at = where + ".known_listed[" + std::to_string(i) + "]";
      expect_kind(kl[i], YAML::NodeType::Map, at, "an object");
      r.known_listed.push_back({text(kl[i], at, "clause"), text_or_empty(kl[i], at, "mode"),
                                text_or_empty(kl[i], at, "where"), text_or_empty(kl[i], at, "sometimes")});
    }
  }
  if (const YAML::Node fs = c["findings"]) {
    expect_kind(fs, YAML::NodeType::Sequence, where + ".findings", "a list");
    for (size_t i = 0; i < fs.size(); ++i) {
      const std::string at = where + ".findings[" + std::to_string(i) + "]";
      expect_kind(fs[i], YAML::NodeType::Map, at, "an object");
      r.findings.push_back(parse_finding(fs[i], at, r.target));
    }
  }
  return r;
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

int status_rank(const std::string& status) { return status == "fail" ? 2 : status == "pass" ? 1 : 0; }

void merge_mode(ModeOutcome& into, const ModeOutcome& from) {
  if (status_rank(from.status) > status_rank(into.status)) into.status = from.status;
  into.cases += from.cases;
  if (into.reason.empty()) into.reason = from.reason;
  if (into.ran_as.empty()) into.ran_as = from.ran_as;
  if (into.status != "not_run") into.reason.clear();
  for (const std::string& c : from.clauses) add_unique(into.clauses, c);
}

void merge_finding(std::vector<ReportedFinding>& into, const ReportedFinding& f) {
  auto same = std::find_if(into.begin(), into.end(), [&](const ReportedFinding& g) {
    return g.clause == f.clause && g.mode == f.mode && g.mistake == f.mistake && g.target == f.target;
  });
  if (same == into.end()) into.push_back(f);
  else if (f.cases_tried < same->cases_tried) *same = f;
}

bool same_result(const ReportedResult& a, const ReportedResult& b) {
  return a.file == b.file && a.op == b.op && a.target == b.target && a.checked == b.checked &&
         a.regression.has_value() == b.regression.has_value();
}

// Merges r into the result `same` picks out of `results`, or into a new one at the end.
template <class Same>
void merge_into_matching(std::vector<ReportedResult>& results, const ReportedResult& r, Same same) {
  auto slot = std::find_if(results.begin(), results.end(), same);
  if (slot == results.end()) {
    results.push_back(empty_result(r.file, r.op, r.target));
    slot = results.end() - 1;
    slot->checked = r.checked;
  }
  merge_into(*slot, r);
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool mode_judges(const ModeOutcome& m, const std::string& clause) {
  return std::find(m.clauses.begin(), m.clauses.end(), clause) != m.clauses.end();
}

// A clause some mode judges for the contract, but none of the modes that ran. Static
// clauses (schema) belong to no mode and are always judged.
bool unjudged(const ReportedResult& r, const std::string& clause) {
  bool listed = false, ran = false;
  for (const auto& [mode, m] : r.modes) {
    listed |= mode_judges(m, clause);
    ran |= m.status != "not_run" && mode_judges(m, clause);
  }
  return listed && !ran;
}

}  // namespace

void merge_into(ReportedResult& into, const ReportedResult& from) {
  for (const std::string& e : from.errors) add_unique(into.errors, e);
  into.cases += from.cases;
  if (!into.regression) into.regression = from.regression;
  else if (from.regression && into.regression->not_run.empty())
    into.regression->not_run = from.regression->not_run;
  for (const auto& [mode, m] : from.modes) merge_mode(into.modes[mode], m);
  for (const auto& [name, hits] : from.branches) {
    auto it = std::find_if(into.branches.begin(), into.branches.end(),
                           [&](const auto& b) { return b.first == name; });
    if (it == into.branches.end()) into.branches.emplace_back(name, hits);
    else it->second += hits;
  }
  for (const std::string& w : from.warnings) add_unique(into.warnings, w);
  into.captured_lines += from.captured_lines;
  if (into.misuse_not_run.empty()) into.misuse_not_run = from.misuse_not_run;
  for (const ReportedFinding& f : from.findings) merge_finding(into.findings, f);
  for (const ReportedNotApplicable& n : from.not_applicable) add_unique(into.not_applicable, n);
  for (const ReportedKnown& k : from.known_listed) add_unique(into.known_listed, k);
  // A branch one shard never hit but another did is covered by the campaign.
  std::erase_if(into.findings, [&](const ReportedFinding& f) {
    if (f.clause != "branches") return false;
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

// A result file's platform in words: "x86_64, <model>; avx2 avx512f (no amx_tile); 2 cores".
std::string platform_words(const YAML::Node& p, const std::string& where) {
  expect_kind(p, YAML::NodeType::Map, where, "an object");
  std::string out = text_or_empty(p, where, "arch");
  if (const std::string cpu = text_or_empty(p, where, "cpu"); !cpu.empty()) out += ", " + cpu;
  const std::vector<std::string> has = p["cpu_features"] ? strings(p["cpu_features"], where + ".cpu_features")
                                                         : std::vector<std::string>{};
  const std::vector<std::string> lacks = p["cpu_features_absent"]
                                             ? strings(p["cpu_features_absent"], where + ".cpu_features_absent")
                                             : std::vector<std::string>{};
  out += "; " + join(has, " ") + (lacks.empty() ? "" : (has.empty() ? "(no " : " (no ") + join(lacks) + ")");
  if (p["cores"]) out += "; " + std::to_string(integer(p, where, "cores")) + " cores";
  if (p["threads"]) out += " (ops ran with " + std::to_string(integer(p, where, "threads")) + " threads each)";
  if (const YAML::Node settings = p["settings"]; settings && settings.IsMap() && settings.size()) {
    std::vector<std::string> set;
    for (const auto& kv : settings) set.push_back(kv.first.Scalar() + "=" + kv.second.Scalar());
    out += "; " + join(set, " ");
  }
  return out;
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
  if (!doc.IsMap() || !doc["version"] || !doc["contracts"])
    bad(name, "not a result file of `opcontract check --json` (a JSON object with version and contracts) "
              "nor of `opcontract admit --json`");
  if (const std::string v = scalar<std::string>(doc["version"], name + ": version", "a number"); v != "1")
    bad(name, "version " + v + ", but this opcontract reads version 1");
  const YAML::Node list = doc["contracts"];
  expect_kind(list, YAML::NodeType::Sequence, name + ": contracts", "a list");
  campaign.files.push_back(name);
  if (const YAML::Node p = doc["platform"]) campaign.platforms.emplace_back(name, platform_words(p, name + ": platform"));
  for (size_t i = 0; i < list.size(); ++i) {
    const ReportedResult r = parse_result(list[i], name + ": contracts[" + std::to_string(i) + "]");
    merge_into_matching(campaign.results, r, [&](const ReportedResult& s) { return same_result(s, r); });
  }
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

std::string checked_label(const ReportedResult& r) {
  return r.checked.empty() ? r.target : r.target + " (" + r.checked + ")";
}

std::vector<ReportedResult> op_results(const Campaign& campaign) {
  std::vector<ReportedResult> ops;
  for (const ReportedResult& r : campaign.results) {
    if (!r.regression)
      merge_into_matching(ops, r, [&](const ReportedResult& o) {
        return o.target == r.target && o.checked == r.checked;
      });
  }
  // Found by name on the pages, whatever order the result files came in.
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return std::tie(a.target, a.checked) < std::tie(b.target, b.checked);
  });
  for (ReportedResult& op : ops) {
    const bool several = std::count_if(ops.begin(), ops.end(), [&](const auto& o) { return o.target == op.target; }) > 1;
    op.id = sanitized_op_name(op.target) + (several ? "--" + sanitized_op_name(op.checked) : "");
  }
  return ops;
}

std::vector<const ReportedResult*> regression_results(const Campaign& campaign) {
  std::vector<const ReportedResult*> out;
  for (const ReportedResult& r : campaign.results)
    if (r.regression) out.push_back(&r);
  return out;
}

ModeVerdict mode_verdict(const ReportedResult& r, Mode m) {
  const std::string& status = r.modes.at(m).status;
  if (status == "not_run") return ModeVerdict::NotRun;
  if (status == "pass") return ModeVerdict::Pass;
  const bool breaks = std::any_of(r.findings.begin(), r.findings.end(), [&](const ReportedFinding& f) {
    return f.mode == to_string(m) && f.known.empty() && f.clause != "misuse";
  });
  return breaks ? ModeVerdict::Fail : ModeVerdict::Known;
}

ModeVerdict misuse_verdict(const ReportedResult& r) {
  const bool judged = std::any_of(r.modes.begin(), r.modes.end(), [](const auto& m) {
    return std::find(m.second.clauses.begin(), m.second.clauses.end(), "misuse") != m.second.clauses.end();
  });
  if (!judged) return ModeVerdict::NotRun;
  bool known = false;
  for (const ReportedFinding& f : r.findings) {
    if (f.clause != "misuse") continue;
    if (f.known.empty()) return ModeVerdict::Fail;
    known = true;
  }
  return known ? ModeVerdict::Known : ModeVerdict::Pass;
}

const char* to_string(ModeVerdict v) {
  switch (v) {
    case ModeVerdict::Pass: return "pass";
    case ModeVerdict::Known: return "known";
    case ModeVerdict::Fail: return "FAIL";
    case ModeVerdict::NotRun: return "not run";
  }
  return "?";
}

const ReportedFinding* first_failure(const ReportedResult& r) {
  for (const ReportedFinding& f : r.findings)
    if (f.known.empty()) return &f;
  return nullptr;
}

std::vector<std::string> failed_clauses(const ReportedResult& r) {
  std::vector<std::string> out;
  for (const ReportedFinding& f : r.findings) add_unique(out, f.clause + (f.known.empty() ? "" : " (known)"));
  return out;
}

RegressionVerdict regression_verdict(const ReportedResult& r) {
  if (!r.errors.empty()) return {RegressionVerdict::Error, "error: " + join(r.errors, "; ")};
  std::vector<std::string> found, want;
  for (const ReportedFinding& f : r.findings) found.push_back(f.clause);
  found = sorted_unique(found);
  for (const std::string& c : r.regression->expect)
    if (!unjudged(r, c)) want.push_back(c);
  want = sorted_unique(want);
  const std::string expect = join(r.regression->expect);
  if (want.empty() && found.empty())
    return {RegressionVerdict::NotRun, "not run: no mode that ran judges " + expect +
                                           (r.regression->not_run.empty() ? "" : " (" + r.regression->not_run + ")")};
  if (!want.empty() && found == want) return {RegressionVerdict::Caught, "caught by " + join(found) + ", as expected"};
  if (found.empty()) return {RegressionVerdict::Missed, "NOT CAUGHT (expected " + expect + ")"};
  return {RegressionVerdict::Missed, "caught by " + join(found) + ", but expected exactly " + join(want)};
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
  for (const ReportedResult& op : op_results(campaign)) {
    const Badge b = op_badge(op);
    const fs::path stem = out / "badges" / op.id;
    write_file_atomically(stem.string() + ".svg", badge_svg(b));
    write_file_atomically(stem.string() + ".json", badge_endpoint_json(b));
  }
}

}  // namespace opc
