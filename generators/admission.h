// Admission: whether an op's contract admits a call a real program made
// (generators/recording.h), so that the calls that matter are known to lie inside what
// the generators draw, or the gap is named.
//
//   Admission a = admit(call, contract);
//   a.admitted   // false: a.pattern "'block_size' outside its range", a.detail with the numbers
//   a.as_case    // when admitted: the call as a Case (its layouts as the strides show)
//
// A call is admitted when the contract's values can be bound from it (each dim or context
// value read off a shape entry, or a scalar, that is that name alone; the rest tried over
// their choices or ranges when few), every value lies in its range or choices, every
// shape is what the bound values give, every tensor's dtype, None-ness and layout (its
// strides as one of the listed layouts lays them out) are ones the contract draws, an
// integer tensor's recorded values lie in its `values:` range, scalars are among their
// choices, arguments share a storage only as the contract's views of one buffer (`view:`,
// lying as far apart as its steps put them) or as aliasing.inplace states, and the
// constraints and requires hold. An admitted call's views stay views of one buffer in
// as_case, so a replay shares the storage as the call did.
#pragma once

#include <optional>
#include <string>

#include "spec/contract.h"
#include "generators/case.h"
#include "generators/recording.h"

namespace opc {

// Where a call lies outside one value's or one integer tensor's domain: the evidence for
// widening the contract, joined over the calls rejected the same way (check/traffic.h).
struct Widening {
  std::string what;      // "'num_blocks'", "the values of 'query_start_loc'"
  std::string now;       // what the contract allows: "range [1, 6]", "choices 32, 64"
  int64_t lo = 0, hi = 0;  // what the call had
  bool choices = false;  // a choice list: the values themselves are the evidence, not a span
  int64_t allowed_lo = 0, allowed_hi = 0;  // a range's bounds at the call's values
};

struct Admission {
  bool admitted = false;
  std::string pattern;  // why not, without the numbers: groups the rejections of one op
  std::string detail;   // why not, with this call's numbers
  std::optional<Widening> widen;  // when one value is what rejected it
  std::optional<Case> as_case;
};

Admission admit(const RecordedCall& call, const Contract& contract);

// The contract with each ranged value also favouring the values these admitted calls were
// made with, so that generation goes on near the real calls (check --traffic).
Contract favouring_calls(const Contract& contract, const std::vector<Case>& admitted);

// The Layout whose geometry (generators/layout.h) gives these strides, among `allowed`;
// none when no listed layout lays a tensor out so.
std::optional<Layout> layout_matching(const RecordedTensor& t, const std::vector<Layout>& allowed);

}  // namespace opc
