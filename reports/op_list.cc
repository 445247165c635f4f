#include "reports/op_list.h"

#include <algorithm>
#include <iomanip>
#include <map>

namespace opc {
namespace {

std::string qualified(const std::string& name, const std::string& overload) {
  return overload.empty() ? name : name + "." + overload;
}

// op name -> what covers it: "contract.yaml (port of _C::rms_norm)".
std::map<std::string, std::vector<std::string>> roles(
    const std::vector<std::shared_ptr<const Contract>>& contracts) {
  std::map<std::string, std::vector<std::string>> r;
  for (const auto& c : contracts) {
    auto add = [&](const std::string& name, const std::string& role) {
      r[name].push_back(c->file + " (" + role + ")");
    };
    add(qualified(c->op, c->overload), "contract");
    if (!c->port.empty()) add(c->port, "port of " + c->op);
    if (!c->reference.empty()) add(c->reference, "reference for " + c->op);
    for (const auto& g : c->regressions) add(g.target, "regression of " + c->op);
    if (c->donates) {
      add(qualified(c->op, c->donates->overload), "donating overload of " + c->op);
      if (!c->port.empty()) add(qualified(c->port, c->donates->overload), "donating overload of " + c->op);
      for (const auto& g : c->regressions)
        add(qualified(g.target, c->donates->overload), "donating overload, regression of " + c->op);
    }
  }
  return r;
}

}  // namespace

int print_op_list(std::ostream& out, const std::vector<std::string>& ops,
                  const std::vector<std::shared_ptr<const Contract>>& contracts,
                  const std::string& where, const std::map<std::string, std::string>& fakes,
                  const std::map<std::string, std::string>& not_covered,
                  const std::map<std::string, std::string>& schemas) {
  std::vector<std::string> sorted = ops;
  std::sort(sorted.begin(), sorted.end());
  const auto covered = roles(contracts);
  size_t width = 0;
  for (const auto& op : sorted) width = std::max(width, op.size());
  int lacking = 0, with_reason = 0;
  for (const auto& op : sorted) {
    out << std::left << std::setw(static_cast<int>(width) + 2) << op;
    if (auto fake = fakes.find(op); fake != fakes.end()) out << "[fake: " << fake->second << "]  ";
    if (auto it = covered.find(op); it != covered.end()) {
      for (size_t i = 0; i < it->second.size(); ++i) out << (i ? "; " : "") << it->second[i];
    } else {
      ++lacking;
      if (auto why = not_covered.find(op); why != not_covered.end()) {
        out << "NOT COVERED: " << why->second;
        ++with_reason;
      } else {
        out << "NO CONTRACT  (draft one: opcontract draft " << op << ")";
      }
    }
    out << "\n";
    if (auto schema = schemas.find(op); schema != schemas.end()) out << "    " << schema->second << "\n";
  }
  out << "\n" << sorted.size() << " op(s), " << sorted.size() - lacking << " covered by the "
      << contracts.size() << " contract(s) in " << where << ", " << lacking << " without one";
  if (with_reason > 0) out << " (" << with_reason << " of them with a NOT_COVERED reason)";
  out << "\n";
  return lacking;
}

}  // namespace opc
