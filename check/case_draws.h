// The draw stage: the cases a check generates, in order. Case i is the same in every run
// of a seed, in every shard and after a resume, because every case is drawn whether it
// runs or not, and targeting (generators/targeting.h) learns from the drawn cases only.
// One case in ten breaks a `requires:` on purpose (the precondition clause), when the
// contract has one and such a case exists. With misuse on, every fourth valid case also
// comes with a caller's mistake made of it (generators/misuse.h), run as a case of its own
// after it; the valid cases are the same with misuse on or off. The mistakes take the
// argument/kind pairs in turn, leaving out those retired (already accepted: a finding).
//
//   CaseDraws draws(contract, options.seed, options.targeted);
//   for (int i = 0; i < n; ++i) {
//     CaseDraws::Draw d = draws.next(i);
//     ... d.c, d.breaks_requires, d.shrinkable (to shrink it by)
//   }
#pragma once

#include <rapidcheck/Gen.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "spec/contract.h"
#include "generators/case.h"
#include "generators/misuse.h"
#include "generators/targeting.h"

namespace opc {

class CaseDraws {
 public:
  CaseDraws(std::shared_ptr<const Contract> contract, uint64_t seed, bool targeted, bool misuse);

  struct Draw {
    rc::Shrinkable<Case> shrinkable;
    Case c;
    bool breaks_requires = false;
    std::optional<Misuse> misuse;  // a caller's mistake to make of c too, as its own case
  };
  // Case i of the run; call it for i = 0, 1, 2, ... in turn. Throws GenerationFailure when
  // no valid case can be drawn.
  Draw next(int i);

  // Whether some cases are drawn to break a requires (the contract has one).
  bool breaks_some() const { return violating_.has_value(); }

  // No more mistakes of this argument and kind: the op accepted one, and it is a finding.
  void retire(int arg, MisuseKind kind) { retired_.insert({arg, kind}); }
  // The argument/kind pairs the cases drawn so far allowed a mistake of.
  int mistake_pairs() const { return static_cast<int>(possible_.size()); }

 private:
  rc::Shrinkable<Case> draw_valid(int i);
  std::optional<Misuse> pick_misuse(const Case& c, int i);

  std::shared_ptr<const Contract> contract_;  // coverage_ holds a reference to it
  const rc::Gen<Case> gen_;
  std::optional<rc::Gen<Case>> violating_;
  rc::Random master_;
  Coverage coverage_;
  bool targeted_;
  bool misuse_;
  std::set<std::pair<int, MisuseKind>> retired_, possible_;
  std::map<std::pair<int, MisuseKind>, int> tries_;  // mistakes drawn of each argument/kind pair
};

// The draw's misuse case, shrinking as its valid case does (the mistake kept).
rc::Shrinkable<Case> misused(const rc::Shrinkable<Case>& valid, const Misuse& misuse);

}  // namespace opc
