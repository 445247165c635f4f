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

ShrunkFinding shrink_finding(CaseWorker& worker, rc::Shrinkable<Case> failing, const CaseOutcome& first,
                             const Finding& finding, int budget) {
  ShrunkFinding s;
  ContractFinding& f = s.finding;
  f.clause = finding.clause;
  f.mode = finding.mode;
  f.message = finding.message;
  f.output = first.output;
  s.died = first.worker_died && !first.hung;
  auto r = shrink_while(std::move(failing), [&](const Case& c) {
    const CaseOutcome outcome = worker.run(c);
    const Finding* same = find_same(outcome.findings, finding);
    if (same) {
      f.message = same->message;
      f.output = outcome.output;
      s.died = outcome.worker_died && !outcome.hung;
    }
    return same != nullptr;
  }, budget);
  f.minimal = r.minimal.value();
  f.shrink_steps = r.steps;
  return s;
}

}  // namespace opc
