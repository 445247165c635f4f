// Greedy shrinking over RapidCheck's shrink tree, as RapidCheck itself does it, but
// driven by us so that a finding keeps the same clause while it shrinks.
//
//   auto r = shrink_while(failing, [&](const Case& c) { return fails_alias(c); }, 2000);
//   r.minimal.value()   // the smallest case found that still fails
#pragma once

#include <rapidcheck/Shrinkable.h>

namespace opc {

template <class T>
struct ShrinkResult {
  rc::Shrinkable<T> minimal;
  int steps = 0;  // accepted shrinks
  int tries = 0;  // predicate calls
};

// Takes the first child that still fails, repeatedly, until none does or `budget`
// predicate calls are spent.
template <class T, class StillFails>
ShrinkResult<T> shrink_while(rc::Shrinkable<T> failing, StillFails&& still_fails, int budget) {
  ShrinkResult<T> r{std::move(failing)};
  for (bool progressed = true; progressed && r.tries < budget;) {
    progressed = false;
    for (auto seq = r.minimal.shrinks(); auto child = seq.next();) {
      if (++r.tries > budget) break;
      if (still_fails(child->value())) {
        r.minimal = std::move(*child);
        ++r.steps;
        progressed = true;
        break;
      }
    }
  }
  return r;
}

}  // namespace opc
