#include "check/result.h"

#include <algorithm>
#include <set>

namespace opc {

bool lists(const KnownFinding& k, const ContractFinding& f) {
  return f.clause == k.clause && (k.mode.empty() || f.mode == k.mode) && f.mistake == k.mistake;
}

std::vector<std::string> found_clauses(const ContractResult& r) {
  std::set<std::string> s;
  for (const auto& f : r.findings) s.insert(f.clause);
  return {s.begin(), s.end()};
}

std::string verdict_of(const ContractResult& r) {
  return std::all_of(r.findings.begin(), r.findings.end(),
                     [](const ContractFinding& f) { return !f.known.empty(); })
             ? "pass"
             : "fail";
}

}  // namespace opc
