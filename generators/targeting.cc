#include "generators/targeting.h"

#include <algorithm>

#include "generators/layout.h"

namespace opc {

Coverage::Coverage(const Contract& contract)
    : contract_(contract),
      branch_hit_(contract.branches.size(), false),
      inplace_made_(contract.inplace.size(), false) {}

std::vector<bool> Coverage::branches_of(const Case& c) const {
  const CaseFacts facts(c, contract_);
  std::vector<bool> hit(contract_.branches.size());
  for (size_t b = 0; b < hit.size(); ++b) {
    try {
      hit[b] = contract_.branches[b].expr.eval(facts.input()) != 0;
    } catch (const EvalError&) {
      hit[b] = false;  // the check itself reports it when the case runs
    }
  }
  return hit;
}

std::vector<std::tuple<int, int, int, int>> Coverage::pairs_of(const Case& c) const {
  std::vector<std::pair<int, int>> layouts;  // arg, layout of each tensor passed
  for (const ArgSpec& a : contract_.args)
    if (const auto* t = std::get_if<TensorCase>(&c.args[a.index]); t && !t->none && a.layouts.size() > 1)
      layouts.emplace_back(a.index, static_cast<int>(t->layout));
  std::vector<std::tuple<int, int, int, int>> pairs;
  for (size_t i = 0; i < layouts.size(); ++i)
    for (size_t j = i + 1; j < layouts.size(); ++j)
      pairs.emplace_back(layouts[i].first, layouts[i].second, layouts[j].first, layouts[j].second);
  return pairs;
}

int Coverage::novelty(const Case& c) const {
  int score = 0;
  const std::vector<bool> hit = branches_of(c);
  for (size_t b = 0; b < hit.size(); ++b) score += hit[b] && !branch_hit_[b] ? 100 : 0;
  if (c.inplace >= 0 && !inplace_made_[c.inplace]) score += 100;
  for (const auto& p : pairs_of(c)) score += layout_pairs_.count(p) ? 0 : 1;
  return score;
}

int Coverage::candidates() const {
  if (!complete()) return 64;
  return draws_since_new_pair_ < 64 ? 8 : 1;
}

bool Coverage::complete() const {
  return std::find(branch_hit_.begin(), branch_hit_.end(), false) == branch_hit_.end() &&
         std::find(inplace_made_.begin(), inplace_made_.end(), false) == inplace_made_.end();
}

void Coverage::add(const Case& c) {
  const std::vector<bool> hit = branches_of(c);
  for (size_t b = 0; b < hit.size(); ++b) branch_hit_[b] = branch_hit_[b] || hit[b];
  if (c.inplace >= 0) inplace_made_[c.inplace] = true;
  bool new_pair = false;
  for (const auto& p : pairs_of(c)) new_pair |= layout_pairs_.insert(p).second;
  draws_since_new_pair_ = new_pair ? 0 : draws_since_new_pair_ + 1;
}

rc::Shrinkable<Case> targeted_draw(const rc::Gen<Case>& gen, const rc::Random& random, int size,
                                   const Coverage& coverage) {
  rc::Random stream = random;
  rc::Shrinkable<Case> best = gen(stream.split(), size);
  int best_score = coverage.novelty(best.value());
  for (int k = 1, n = coverage.candidates(); k < n; ++k) {
    rc::Shrinkable<Case> candidate = gen(stream.split(), size);
    const int score = coverage.novelty(candidate.value());
    if (score > best_score) {
      best = std::move(candidate);
      best_score = score;
    }
  }
  return best;
}

}  // namespace opc
