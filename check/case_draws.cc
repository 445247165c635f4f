#include "check/case_draws.h"

#include <rapidcheck/GenerationFailure.h>

#include "generators/case_gen.h"

namespace opc {

CaseDraws::CaseDraws(std::shared_ptr<const Contract> contract, uint64_t seed, bool targeted)
    : contract_(std::move(contract)), gen_(case_gen(contract_)), master_(seed), coverage_(*contract_),
      targeted_(targeted) {
  if (!contract_->requires_.empty()) violating_ = violating_case_gen(contract_);
}

rc::Shrinkable<Case> CaseDraws::draw_valid(int i) {
  return targeted_ ? targeted_draw(gen_, master_.split(), i % 101, coverage_) : gen_(master_.split(), i % 101);
}

CaseDraws::Draw CaseDraws::next(int i) {
  bool breaks = violating_ && i % 10 == 9;
  rc::Shrinkable<Case> s = breaks ? (*violating_)(master_.split(), i % 101) : draw_valid(i);
  Case c;
  try {
    c = s.value();
  } catch (const rc::GenerationFailure&) {
    if (!breaks) throw;
    // This draw found no case breaking a requires: a valid case takes its place.
    breaks = false;
    s = draw_valid(i);
    c = s.value();
  }
  if (!breaks) coverage_.add(c);
  return {std::move(s), std::move(c), breaks};
}

}  // namespace opc
