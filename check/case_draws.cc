#include "check/case_draws.h"

#include <rapidcheck/GenerationFailure.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <algorithm>

#include "generators/case_gen.h"
#include "support/names.h"

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

std::optional<Misuse> CaseDraws::pick_misuse(const Case& c, int i) {
  std::vector<Misuse> all = misuse_variants(c, *contract_);
  for (const Misuse& m : all) possible_.insert({m.arg, m.kind});
  std::erase_if(all, [&](const Misuse& m) { return retired_.count({m.arg, m.kind}) > 0; });
  if (all.empty()) return std::nullopt;
  // The argument/kind pairs take turns (sizes are the most numerous variants, and would
  // crowd out an index past the end; the first argument would crowd out the last), so that
  // every pair is tried within a few rounds; within a pair, its variants in turn (each dim
  // one smaller, zero, one larger, doubled), so that a pair accepted by one variant only is
  // found as surely. From the case index and the draws so far alone: the valid cases'
  // random stream is untouched, and a seed gives the same mistakes on every machine.
  std::vector<std::pair<int, MisuseKind>> pairs;
  for (const Misuse& m : all) add_unique(pairs, std::pair{m.arg, m.kind});
  const auto pair = pairs[static_cast<size_t>(i / 4) % pairs.size()];
  std::vector<Misuse> of_pair;
  for (const Misuse& m : all)
    if (std::pair{m.arg, m.kind} == pair) of_pair.push_back(m);
  return of_pair[static_cast<size_t>(tries_[pair]++) % of_pair.size()];
}

rc::Shrinkable<Case> misused(const rc::Shrinkable<Case>& valid, const Misuse& misuse) {
  return rc::shrinkable::map(valid, [misuse](Case k) {
    k.misuse = misuse;
    return k;
  });
}

}  // namespace opc
