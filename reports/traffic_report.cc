#include "reports/traffic_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <vector>

#include "support/json_writer.h"
#include "support/names.h"

namespace opc {
namespace {

int64_t total_calls(const TrafficResult& t) {
  int64_t n = 0;
  for (const OpTraffic& op : t.ops) n += op.calls;
  return n;
}

std::string percent(int64_t part, int64_t whole) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1)
    << (whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 100.0) << "%";
  return s.str();
}

// What a reader asks first: how much of the program's traffic the contracts admit, and
// which ops fall short (without a contract, or a contract admitting under 95% of its calls).
void print_totals(std::ostream& out, const TrafficResult& t) {
  int64_t admitted = 0, uncovered_calls = 0;
  std::vector<std::string> uncovered, short_of;
  for (const OpTraffic& op : t.ops) {
    admitted += op.admitted;
    if (op.contracts.empty()) {
      uncovered.push_back(op.op);
      uncovered_calls += op.calls;
    } else if (op.admitted * 100 < op.calls * 95) {
      short_of.push_back(op.op + " " + std::to_string(op.admitted) + "/" + std::to_string(op.calls));
    }
  }
  const int64_t calls = total_calls(t);
  out << "\nadmitted: " << admitted << " of " << calls << " call(s) (" << percent(admitted, calls) << ")";
  if (!uncovered.empty()) {
    const int64_t contracted = calls - uncovered_calls;
    out << "; of the " << contracted << " to ops with a contract, " << percent(admitted, contracted)
        << "; without a contract: " << uncovered.size() << " op(s), " << uncovered_calls << " call(s)";
  }
  out << "\n";
  if (!short_of.empty()) out << "contracts admitting under 95% of their op's calls: " << join(short_of) << "\n";
}

// "'num_blocks' was 16 to 64 in these calls: range [1, 64] would admit them (now range
// [1, 6])": the widening the calls are evidence for, or "" when no one value rejected them.
std::string widening_text(const TrafficRejection& r) {
  if (!r.widen) return "";
  const Widening& w = *r.widen;
  std::ostringstream s;
  s << w.what << " was ";
  if (w.choices) {
    std::vector<std::string> seen;
    for (int64_t v : r.values) seen.push_back(std::to_string(v));
    s << join(seen) << (r.values.size() == kWideningValues ? ", ..." : "") << " in these calls: add "
      << (seen.size() == 1 ? "it" : "them") << " to its " << w.now;
  } else {
    s << (w.lo == w.hi ? std::to_string(w.lo) : std::to_string(w.lo) + " to " + std::to_string(w.hi))
      << " in these calls: [" << std::min(w.lo, w.allowed_lo) << ", " << std::max(w.hi, w.allowed_hi)
      << "] would admit them (now " << w.now << ")";
  }
  return s.str();
}

// "3 config(s): a, b, c" (the first kShownPrograms of them).
std::string programs_text(const std::vector<std::string>& programs) {
  constexpr size_t kShownPrograms = 6;
  std::vector<std::string> shown(programs.begin(), programs.begin() + std::min(programs.size(), kShownPrograms));
  if (programs.size() > kShownPrograms)
    shown.push_back("and " + std::to_string(programs.size() - kShownPrograms) + " more");
  return std::to_string(programs.size()) + " program(s): " + join(shown);
}

}  // namespace

void print_traffic(std::ostream& out, const TrafficResult& t) {
  out << "real calls held to the contracts (" << join(t.recordings) << "): " << t.ops.size() << " op(s), "
      << total_calls(t) << " call(s)\n";
  for (const OpTraffic& op : t.ops) {
    out << "\n  " << std::left << std::setw(44) << op.op << std::right << std::setw(8) << op.calls << " calls";
    if (op.contracts.empty()) {
      out << "   no contract" << (op.not_covered.empty() ? "" : " (NOT_COVERED: " + op.not_covered + ")") << "\n";
      continue;
    }
    out << std::setw(8) << op.admitted << " admitted   " << join(op.contracts) << "\n";
    for (const TrafficRejection& r : op.rejections) {
      out << "     " << r.calls << " call(s) not admitted: " << r.pattern << "\n       e.g. " << r.detail << "\n";
      if (const std::string w = widening_text(r); !w.empty()) out << "       widen: " << w << "\n";
      if (!r.programs.empty()) out << "       made by " << programs_text(r.programs) << "\n";
      out << "       call: " << r.example << "\n";
    }
  }
  print_totals(out, t);
}

std::string traffic_json(const TrafficResult& t) {
  JsonWriter w;
  w.begin_object().key("version").value(1).key("kind").value("traffic");
  w.key("recordings").begin_array();
  for (const std::string& r : t.recordings) w.value(r);
  w.end_array();
  w.key("ops").begin_array();
  for (const OpTraffic& op : t.ops) {
    w.begin_object().key("op").value(op.op).key("calls").value(op.calls).key("signatures").value(op.signatures);
    w.key("admitted").value(op.admitted);
    w.key("contract");
    if (op.contracts.empty()) w.null();
    else w.value(op.contracts[0]);
    w.key("contracts").begin_array();
    for (const std::string& c : op.contracts) w.value(c);
    w.end_array();
    w.key("not_covered").value(op.not_covered);
    w.key("rejections").begin_array();
    for (const TrafficRejection& r : op.rejections) {
      w.begin_object()
          .key("pattern")
          .value(r.pattern)
          .key("calls")
          .value(r.calls)
          .key("detail")
          .value(r.detail)
          .key("example")
          .value(r.example);
      w.key("programs").begin_array();
      for (const std::string& p : r.programs) w.value(p);
      w.end_array();
      w.key("widen");
      if (r.widen) w.value(widening_text(r));
      else w.null();
      w.end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace opc
