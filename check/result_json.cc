#include "check/result_json.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "support/json_writer.h"
#include "support/names.h"

namespace opc {
namespace {

// ---------------------------------------------------------------------------------------
// Writing

// Seconds to the millisecond: a profile, not a benchmark.
double to_ms(double s) { return std::round(s * 1000) / 1000; }

void write_mode_or_null(JsonWriter& w, const std::optional<Mode>& m) {
  if (m) w.value(to_string(*m));
  else w.null();
}

void write_clauses(JsonWriter& w, const std::vector<Clause>& clauses) {
  w.begin_array();
  for (Clause c : clauses) w.value(to_string_view(c));
  w.end_array();
}

void write_mistake(JsonWriter& w, const MistakeId& m) {
  w.begin_object().key("arg").value(m.arg).key("kind").value(m.kind).end_object();
}

void write_finding(JsonWriter& w, const ContractFinding& f) {
  w.begin_object();
  w.key("clause").value(to_string_view(f.clause));
  w.key("mode");
  write_mode_or_null(w, f.mode);
  if (!f.mistake.empty()) write_mistake(w.key("mistake"), f.mistake);
  w.key("message").value(f.message);
  if (f.has_case()) w.key("case").raw(f.case_json);
  w.key("target").value(f.target).key("seed").value(f.seed);
  w.key("cases_tried").value(f.cases_tried).key("shrink_steps").value(f.shrink_steps);
  if (!f.from_file.empty()) w.key("from_file").value(f.from_file);
  if (!f.known.empty()) w.key("known").value(f.known);
  if (!f.output.empty()) w.key("output").value(f.output);
  w.key("replay").value(f.replay);
  w.end_object();
}

void write_modes(JsonWriter& w, const ContractResult& r) {
  w.key("modes").begin_object();
  for (const auto& [mode, m] : r.modes) {
    w.key(to_string(mode)).begin_object();
    w.key("status").value(to_string(m.status)).key("cases").value(m.cases);
    if (!m.reason.empty()) w.key("reason").value(m.reason);
    if (!m.ran_as.empty()) w.key("ran_as").value(m.ran_as);
    write_clauses(w.key("clauses"), m.judged);
    w.end_object();
  }
  w.end_object();
}

void write_misuse(JsonWriter& w, const ContractResult& r) {
  if (r.misuse_cases) {
    w.key("misuse_cases").value(r.misuse_cases).key("misuse_pairs_possible").value(r.misuse_pairs_possible);
    w.key("misuse_tried").begin_array();
    for (const MistakeId& m : r.mistakes_tried) write_mistake(w, m);
    w.end_array();
  }
  if (!r.misuse_not_run.empty()) w.key("misuse_not_run").value(r.misuse_not_run);
  if (!r.declined.empty()) {
    w.key("declined").begin_object();
    for (const auto& [why, n] : r.declined) w.key(why).value(n);
    w.end_object();
  }
}

void write_known(JsonWriter& w, const ContractResult& r) {
  if (!r.not_applicable.empty()) {
    w.key("not_applicable").begin_array();
    for (const NotApplicable& n : r.not_applicable) {
      w.begin_object().key("clause").value(to_string_view(n.clause)).key("mode");
      write_mode_or_null(w, n.mode);
      w.key("reason").value(n.reason).key("why").value(n.why).end_object();
    }
    w.end_array();
  }
  if (!r.known_listed.empty()) {
    w.key("known_listed").begin_array();
    for (const ListedKnown& k : r.known_listed) {
      w.begin_object().key("clause").value(to_string_view(k.clause)).key("mode");
      write_mode_or_null(w, k.mode);
      w.key("where").value(k.where).key("sometimes").value(k.sometimes).end_object();
    }
    w.end_array();
  }
}

void write_seconds(JsonWriter& w, const TimeSpent& t) {
  w.key("seconds").begin_object();
  w.key("total").value(to_ms(t.total)).key("cases").value(to_ms(t.cases));
  w.key("modes").begin_object();
  for (const auto& [m, s] : t.modes) w.key(to_string(m)).value(to_ms(s));
  w.end_object();
  w.key("misuse").value(to_ms(t.misuse)).key("shrinking").value(to_ms(t.shrinking));
  w.end_object();
}

void write_result(JsonWriter& w, const ContractResult& r) {
  w.begin_object();
  w.key("file").value(r.file).key("op").value(r.op).key("target").value(r.target);
  if (!r.checked.empty()) w.key("checked").value(r.checked);
  w.key("verdict").value(to_string(r.verdict));
  if (!r.errors.empty()) {
    w.key("errors").begin_array();
    for (const std::string& e : r.errors) w.value(e);
    w.end_array();
  }
  w.key("seed").value(r.seed).key("cases").value(r.cases).key("replayed").value(r.replayed);
  write_misuse(w, r);
  if (r.regression) {
    const RegressionResult& g = *r.regression;
    w.key("regression").begin_object();
    write_clauses(w.key("expect"), g.expect);
    w.key("upstream").value(g.upstream).key("caught_as_expected").value(g.caught_as_expected);
    if (!g.not_run.empty()) w.key("not_run").value(g.not_run);
    w.end_object();
  }
  write_modes(w, r);
  w.key("branches").begin_object();
  for (const auto& [name, hits] : r.branches) w.key(name).value(hits);
  w.end_object();
  w.key("warnings").begin_array();
  for (const std::string& warning : r.warnings) w.value(warning);
  w.end_array();
  if (r.captured_lines) w.key("captured_lines").value(r.captured_lines);
  write_seconds(w, r.seconds);
  w.key("findings").begin_array();
  for (const ContractFinding& f : r.findings) write_finding(w, f);
  w.end_array();
  write_known(w, r);
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

// ---------------------------------------------------------------------------------------
// Reading: JSON is YAML, so yaml-cpp reads it; every error names the file and the field.

class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void bad(const std::string& at, const std::string& what) const {
    throw ResultsError(where_ + ": " + at + ": " + what);
  }
  YAML::Node field(const YAML::Node& o, const std::string& at, const char* key) const {
    const YAML::Node n = o[key];
    if (!n) bad(at, std::string("no '") + key + "'");
    return n;
  }
  template <class T>
  T scalar(const YAML::Node& n, const std::string& at, const char* expected) const {
    try {
      if (n.IsScalar()) return n.as<T>();
    } catch (const YAML::Exception&) {
    }
    bad(at, std::string("expected ") + expected);
  }
  std::string text(const YAML::Node& o, const std::string& at, const char* key) const {
    return scalar<std::string>(field(o, at, key), at + "." + key, "a string");
  }
  std::string text_or_empty(const YAML::Node& o, const std::string& at, const char* key) const {
    return o[key] ? text(o, at, key) : "";
  }
  int64_t integer(const YAML::Node& o, const std::string& at, const char* key) const {
    return scalar<int64_t>(field(o, at, key), at + "." + key, "an integer");
  }
  int64_t integer_or_zero(const YAML::Node& o, const std::string& at, const char* key) const {
    return o[key] ? integer(o, at, key) : 0;
  }
  double number_or_zero(const YAML::Node& o, const std::string& at, const char* key) const {
    return o[key] ? scalar<double>(o[key], at + "." + key, "a number") : 0;
  }
  void expect_kind(const YAML::Node& n, YAML::NodeType::value kind, const std::string& at, const char* expected) const {
    if (n.Type() != kind) bad(at, std::string("expected ") + expected);
  }
  std::vector<std::string> strings(const YAML::Node& list, const std::string& at) const {
    expect_kind(list, YAML::NodeType::Sequence, at, "a list");
    std::vector<std::string> out;
    for (size_t i = 0; i < list.size(); ++i)
      out.push_back(scalar<std::string>(list[i], at + "[" + std::to_string(i) + "]", "a string"));
    return out;
  }
  // Each element of a list, with where it is: "findings[2]".
  template <class F>
  void each(const YAML::Node& o, const std::string& at, const char* key, F&& f) const {
    const YAML::Node list = o[key];
    if (!list) return;
    expect_kind(list, YAML::NodeType::Sequence, at + "." + key, "a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = at + "." + key + "[" + std::to_string(i) + "]";
      expect_kind(list[i], YAML::NodeType::Map, item, "an object");
      f(list[i], item);
    }
  }
  Clause clause(const std::string& id, const std::string& at) const {
    if (const std::optional<Clause> c = clause_named(id)) return *c;
    bad(at, "'" + id + "' is no clause (" + clause_list() + ")");
  }
  Clause clause(const YAML::Node& n, const std::string& at) const {
    return clause(scalar<std::string>(n, at, "a clause id"), at);
  }
  std::vector<Clause> clauses(const YAML::Node& list, const std::string& at) const {
    std::vector<Clause> out;
    for (const std::string& id : strings(list, at)) out.push_back(clause(id, at));
    return out;
  }
  Mode mode(const std::string& name, const std::string& at) const {
    if (const std::optional<Mode> m = mode_named(name)) return *m;
    bad(at, "'" + name + "' is no mode (fake, eager, compiled, cudagraph)");
  }
  // A mode or null (a static clause's finding, an entry for any mode).
  std::optional<Mode> mode_or_null(const YAML::Node& o, const std::string& at) const {
    const YAML::Node n = field(o, at, "mode");
    if (n.IsNull()) return std::nullopt;
    return mode(scalar<std::string>(n, at + ".mode", "a mode or null"), at + ".mode");
  }
  MistakeId mistake(const YAML::Node& m, const std::string& at) const {
    expect_kind(m, YAML::NodeType::Map, at, "an object");
    return {text(m, at, "arg"), text(m, at, "kind")};
  }

 private:
  std::string where_;
};

// A JSON value read by yaml-cpp, written back as JSON. Quoted scalars (tag "!") are
// strings; plain ones are the document's numbers, true, false and null, kept as written.
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

ContractFinding read_finding(const Reader& in, const YAML::Node& f, const std::string& at) {
  ContractFinding out;
  out.clause = in.clause(in.field(f, at, "clause"), at + ".clause");
  out.mode = in.mode_or_null(f, at);
  if (const YAML::Node m = f["mistake"]) out.mistake = in.mistake(m, at + ".mistake");
  out.message = in.text(f, at, "message");
  if (f["case"]) {
    JsonWriter w;
    write_json(w, f["case"]);
    out.case_json = w.str();
  }
  out.target = in.text(f, at, "target");
  out.seed = in.scalar<uint64_t>(in.field(f, at, "seed"), at + ".seed", "an unsigned integer");
  out.cases_tried = in.integer(f, at, "cases_tried");
  out.shrink_steps = in.integer(f, at, "shrink_steps");
  out.from_file = in.text_or_empty(f, at, "from_file");
  out.known = in.text_or_empty(f, at, "known");
  out.output = in.text_or_empty(f, at, "output");
  out.replay = in.text(f, at, "replay");
  return out;
}

ModeResult read_mode(const Reader& in, const YAML::Node& m, const std::string& at) {
  in.expect_kind(m, YAML::NodeType::Map, at, "an object");
  ModeResult out;
  const std::string status = in.text(m, at, "status");
  const std::optional<ModeStatus> s = mode_status_named(status);
  if (!s) in.bad(at + ".status", "'" + status + "' is none of pass, fail, not_run");
  out.status = *s;
  out.cases = in.integer(m, at, "cases");
  out.reason = in.text_or_empty(m, at, "reason");
  out.ran_as = in.text_or_empty(m, at, "ran_as");
  out.judged = in.clauses(in.field(m, at, "clauses"), at + ".clauses");
  return out;
}

void read_misuse(const Reader& in, const YAML::Node& c, const std::string& at, ContractResult& r) {
  r.misuse_cases = in.integer_or_zero(c, at, "misuse_cases");
  r.misuse_pairs_possible = in.integer_or_zero(c, at, "misuse_pairs_possible");
  if (const YAML::Node t = c["misuse_tried"]) {
    in.expect_kind(t, YAML::NodeType::Sequence, at + ".misuse_tried", "a list");
    for (size_t i = 0; i < t.size(); ++i)
      r.mistakes_tried.push_back(in.mistake(t[i], at + ".misuse_tried[" + std::to_string(i) + "]"));
  }
  r.misuse_not_run = in.text_or_empty(c, at, "misuse_not_run");
  if (const YAML::Node d = c["declined"]) {
    in.expect_kind(d, YAML::NodeType::Map, at + ".declined", "an object");
    for (const auto& kv : d)
      r.declined[kv.first.Scalar()] = in.scalar<int64_t>(kv.second, at + ".declined", "an integer");
  }
}

void read_known(const Reader& in, const YAML::Node& c, const std::string& at, ContractResult& r) {
  in.each(c, at, "not_applicable", [&](const YAML::Node& n, const std::string& item) {
    r.not_applicable.push_back({in.clause(in.field(n, item, "clause"), item + ".clause"), in.mode_or_null(n, item),
                                in.text(n, item, "reason"), in.text(n, item, "why")});
  });
  in.each(c, at, "known_listed", [&](const YAML::Node& n, const std::string& item) {
    r.known_listed.push_back({in.clause(in.field(n, item, "clause"), item + ".clause"), in.mode_or_null(n, item),
                              in.text_or_empty(n, item, "where"), in.text_or_empty(n, item, "sometimes")});
  });
}

TimeSpent read_seconds(const Reader& in, const YAML::Node& c, const std::string& at) {
  TimeSpent t;
  const YAML::Node s = c["seconds"];
  if (!s) return t;
  const std::string here = at + ".seconds";
  in.expect_kind(s, YAML::NodeType::Map, here, "an object");
  t.total = in.number_or_zero(s, here, "total");
  t.cases = in.number_or_zero(s, here, "cases");
  if (const YAML::Node modes = s["modes"])
    for (const auto& kv : modes)
      t.modes[in.mode(kv.first.Scalar(), here + ".modes")] = in.scalar<double>(kv.second, here + ".modes", "a number");
  t.misuse = in.number_or_zero(s, here, "misuse");
  t.shrinking = in.number_or_zero(s, here, "shrinking");
  return t;
}

ContractResult read_result(const Reader& in, const YAML::Node& c, const std::string& at) {
  in.expect_kind(c, YAML::NodeType::Map, at, "an object");
  ContractResult r = empty_result(in.text(c, at, "file"), in.text(c, at, "op"), in.text(c, at, "target"));
  r.checked = in.text_or_empty(c, at, "checked");
  const std::string verdict = in.text(c, at, "verdict");
  const std::optional<Verdict> v = verdict_named(verdict);
  if (!v) in.bad(at + ".verdict", "'" + verdict + "' is none of pass, fail, error");
  r.verdict = *v;
  if (c["errors"]) r.errors = in.strings(c["errors"], at + ".errors");
  r.seed = in.scalar<uint64_t>(in.field(c, at, "seed"), at + ".seed", "an unsigned integer");
  r.cases = in.integer(c, at, "cases");
  r.replayed = in.integer_or_zero(c, at, "replayed");
  read_misuse(in, c, at, r);
  if (const YAML::Node g = c["regression"]) {
    const std::string here = at + ".regression";
    in.expect_kind(g, YAML::NodeType::Map, here, "an object");
    r.regression = RegressionResult{in.clauses(in.field(g, here, "expect"), here + ".expect"),
                                    in.text_or_empty(g, here, "upstream"),
                                    in.scalar<bool>(in.field(g, here, "caught_as_expected"),
                                                    here + ".caught_as_expected", "true or false"),
                                    in.text_or_empty(g, here, "not_run")};
  }
  const YAML::Node modes = in.field(c, at, "modes");
  in.expect_kind(modes, YAML::NodeType::Map, at + ".modes", "an object");
  for (const auto& kv : modes) {
    const std::string here = at + ".modes." + kv.first.Scalar();
    r.modes[in.mode(kv.first.Scalar(), here)] = read_mode(in, kv.second, here);
  }
  if (const YAML::Node b = c["branches"]) {
    in.expect_kind(b, YAML::NodeType::Map, at + ".branches", "an object");
    for (const auto& kv : b)
      r.branches.emplace_back(kv.first.Scalar(), in.scalar<int64_t>(kv.second, at + ".branches." + kv.first.Scalar(),
                                                                    "an integer"));
  }
  if (c["warnings"]) r.warnings = in.strings(c["warnings"], at + ".warnings");
  r.captured_lines = in.integer_or_zero(c, at, "captured_lines");
  r.seconds = read_seconds(in, c, at);
  in.each(c, at, "findings", [&](const YAML::Node& f, const std::string& item) {
    r.findings.push_back(read_finding(in, f, item));
  });
  read_known(in, c, at, r);
  return r;
}

// The platform in words: "x86_64, <model>; avx2 avx512f (no amx_tile); 2 cores".
std::string platform_words(const Reader& in, const YAML::Node& p) {
  const std::string at = "platform";
  in.expect_kind(p, YAML::NodeType::Map, at, "an object");
  std::string out = in.text_or_empty(p, at, "arch");
  if (const std::string cpu = in.text_or_empty(p, at, "cpu"); !cpu.empty()) out += ", " + cpu;
  const auto list = [&](const char* key) {
    return p[key] ? in.strings(p[key], at + "." + key) : std::vector<std::string>{};
  };
  const std::vector<std::string> has = list("cpu_features"), lacks = list("cpu_features_absent");
  out += "; " + join(has, " ") + (lacks.empty() ? "" : (has.empty() ? "(no " : " (no ") + join(lacks) + ")");
  if (p["cores"]) out += "; " + std::to_string(in.integer(p, at, "cores")) + " cores";
  if (p["threads"]) out += " (ops ran with " + std::to_string(in.integer(p, at, "threads")) + " threads each)";
  if (const YAML::Node settings = p["settings"]; settings && settings.IsMap() && settings.size()) {
    std::vector<std::string> set;
    for (const auto& kv : settings) set.push_back(kv.first.Scalar() + "=" + kv.second.Scalar());
    out += "; " + join(set, " ");
  }
  return out;
}

}  // namespace

std::string results_json(const std::vector<ContractResult>& results, const Platform& platform) {
  JsonWriter w;
  w.begin_object().key("version").value(kResultsVersion);
  write_platform(w, platform);
  w.key("contracts").begin_array();
  for (const ContractResult& r : results) write_result(w, r);
  w.end_array().end_object();
  return w.str() + "\n";
}

ResultsFile read_results_json(const std::string& text, const std::string& name) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ResultsError(name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                       ": not valid JSON: " + e.msg);
  }
  const Reader in(name);
  if (!doc.IsMap() || !doc["version"] || !doc["contracts"])
    throw ResultsError(name + ": not a result file of `opcontract check --json` (a JSON object with version and "
                              "contracts)");
  if (const std::string v = in.scalar<std::string>(doc["version"], "version", "a number");
      v != std::to_string(kResultsVersion))
    throw ResultsError(name + ": version " + v + ", but this opcontract reads version " +
                       std::to_string(kResultsVersion) + " (docs/format.md, \"Results\"): check again to write it");
  ResultsFile out;
  if (const YAML::Node p = doc["platform"]) out.platform = platform_words(in, p);
  const YAML::Node list = doc["contracts"];
  in.expect_kind(list, YAML::NodeType::Sequence, "contracts", "a list");
  for (size_t i = 0; i < list.size(); ++i)
    out.results.push_back(read_result(in, list[i], "contracts[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace opc
