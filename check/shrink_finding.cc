#include "check/shrink_finding.h"

#include "generators/shrink.h"

namespace opc {
namespace {

const Finding* find_same(const std::vector<Finding>& fs, const Finding& like) {
  for (const Finding& f : fs)
    if (f.clause == like.clause && f.mode == like.mode) return &f;
  return nullptr;
}

}  // namespace

ContractFinding shrink_finding(CaseWorker& worker, rc::Shrinkable<Case> failing, const Finding& first,
                               int budget) {
  ContractFinding f;
  f.clause = first.clause;
  f.mode = first.mode;
  f.message = first.message;
  auto r = shrink_while(std::move(failing), [&](const Case& c) {
    const std::vector<Finding> fs = worker.run(c).findings;
    const Finding* same = find_same(fs, first);
    if (same) f.message = same->message;
    return same != nullptr;
  }, budget);
  f.minimal = r.minimal.value();
  f.shrink_steps = r.steps;
  f.has_case = true;
  return f;
}

}  // namespace opc
