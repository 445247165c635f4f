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
                               const std::string& first_output, int budget) {
  ContractFinding f;
  f.clause = first.clause;
  f.mode = first.mode;
  f.message = first.message;
  f.output = first_output;
  auto r = shrink_while(std::move(failing), [&](const Case& c) {
    const CaseOutcome outcome = worker.run(c);
    const Finding* same = find_same(outcome.findings, first);
    if (same) {
      f.message = same->message;
      f.output = outcome.output;
    }
    return same != nullptr;
  }, budget);
  f.minimal = r.minimal.value();
  f.shrink_steps = r.steps;
  f.has_case = true;
  return f;
}

}  // namespace opc
