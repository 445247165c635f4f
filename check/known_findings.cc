#include "check/known_findings.h"

namespace opc {

void apply_known_findings(const std::vector<KnownFinding>& known, const std::string& where,
                          ContractResult& r) {
  for (const KnownFinding& k : known) {
    bool occurred = false;
    for (ContractFinding& f : r.findings)
      if (f.clause == k.clause && (k.mode.empty() || f.mode == k.mode) && f.known.empty()) {
        f.known = k.reason;
        occurred = true;
      }
    if (!occurred && !k.sometimes)
      r.findings.push_back({k.clause, k.mode,
                            "listed under " + where + " (" + to_string(k.loc) + ": " + k.reason +
                                ") but not found in " + std::to_string(r.cases) +
                                " cases: if the op was fixed, remove the entry"});
  }
}

}  // namespace opc
