#include "check/case_draws.h"

#include <rapidcheck/GenerationFailure.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <algorithm>

#include "generators/case_gen.h"

namespace opc {

CaseDraws::CaseDraws(std::shared_ptr<const Contract> contract, uint64_t seed, bool targeted, bool misuse)
    : contract_(std::move(contract)), gen_(case_gen(contract_)), master_(seed), coverage_(*contract_),
      targeted_(targeted), misuse_(misuse && contract_->misuse_skip.empty()) {
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
  Draw d{std::move(s), std::move(c), breaks, std::nullopt};
  if (misuse_ && !breaks && i % 4 == 1) d.misuse = pick_misuse(d.c, i);
  return d;
}

std::optional<Misuse> CaseDraws::pick_misuse(const Case& c, int i) const {
  const std::vector<Misuse> all = misuse_variants(c, *contract_);
  if (all.empty()) return std::nullopt;
  // The kinds take turns (sizes are the most numerous variants, and would crowd out an
  // index past the end); within a kind, one at random. From the case index and the data
  // seed alone: the valid cases' random stream is untouched.
  std::vector<MisuseKind> kinds;
  for (const Misuse& m : all)
    if (std::find(kinds.begin(), kinds.end(), m.kind) == kinds.end()) kinds.push_back(m.kind);
  const MisuseKind kind = kinds[static_cast<size_t>(i / 4) % kinds.size()];
  std::vector<Misuse> of_kind;
  for (const Misuse& m : all)
    if (m.kind == kind) of_kind.push_back(m);
  const uint64_t pick = (c.data_seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1))) % of_kind.size();
  return of_kind[pick];
}

rc::Shrinkable<Case> misused(const rc::Shrinkable<Case>& valid, const Misuse& misuse) {
  return rc::shrinkable::map(valid, [misuse](Case k) {
    k.misuse = misuse;
    return k;
  });
}

}  // namespace opc
