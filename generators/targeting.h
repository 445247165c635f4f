// Targeted generation: steers a run towards what it has not covered yet, the way
// Hypothesis's target() does, deterministically per seed.
//
//   Coverage coverage(contract);
//   rc::Shrinkable<Case> s = targeted_draw(gen, master.split(), size, coverage);
//   coverage.add(s.value());   // every drawn case, run or not (shards, resumes)
//
// Each draw makes candidates from its own random stream and keeps the one that covers
// most of what no earlier case did: a declared branch never hit, an in-place use never
// made, a pair of layouts of two tensor arguments never seen together. Candidates are
// cheap next to running the op: 64 while a declared branch or in-place use is unhit, 8
// while layout pairs are still turning up, then 1 (plain generation). Coverage
// depends only on the cases drawn, never on the op's results, so case i is the same in
// every shard of a run and after a resume.
#pragma once

#include <rapidcheck.h>

#include <set>
#include <tuple>
#include <vector>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

class Coverage {
 public:
  explicit Coverage(const Contract& contract);
  // What the case would cover that no added case has: unhit branches and in-place uses
  // weigh 100 each, each unseen layout pair 1.
  int novelty(const Case& c) const;
  void add(const Case& c);
  // Whether every declared branch was hit and every in-place use made.
  bool complete() const;
  // How many candidates the next draw should weigh.
  int candidates() const;

 private:
  const Contract& contract_;
  std::vector<bool> branch_hit_, inplace_made_;
  std::set<std::tuple<int, int, int, int>> layout_pairs_;  // arg, layout, arg, layout
  int draws_since_new_pair_ = 0;
  std::vector<std::tuple<int, int, int, int>> pairs_of(const Case& c) const;
  std::vector<bool> branches_of(const Case& c) const;
};

rc::Shrinkable<Case> targeted_draw(const rc::Gen<Case>& gen, const rc::Random& random, int size,
                                   const Coverage& coverage);

}  // namespace opc
