// Real traffic held to the contracts: the calls a program made (generators/recording.h),
// per op, each judged by its op's contract (generators/admission.h).
//
//   TrafficResult t = hold_to_contracts(read_recordings(files), contracts, not_covered);
//   t.ops[0].admitted, t.ops[0].rejections[0].pattern
//
// An op is covered by every contract whose `op:` names it; a call is admitted when one of
// them admits it. Rejections of one op are grouped by pattern (the reason without its
// numbers), each with its call count and the first call that showed it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spec/contract.h"
#include "generators/admission.h"
#include "generators/recording.h"

namespace opc {

struct TrafficRejection {
  std::string pattern;
  int64_t calls = 0;
  std::string detail;   // the first such call's reason, with its numbers
  std::string example;  // that call (recorded_call_text)
  std::vector<std::string> programs;  // the recorded programs (a sweep's configs) that made them
  // What these calls had where one value rejected them, joined: the span (lo..hi) and, for
  // a choice list, the values themselves (up to kWideningValues).
  std::optional<Widening> widen;
  std::vector<int64_t> values;
};
inline constexpr size_t kWideningValues = 16;

struct OpTraffic {
  std::string op;
  int64_t calls = 0, admitted = 0;
  int signatures = 0;                  // distinct recorded calls
  std::vector<std::string> contracts;  // the files covering it; empty: none
  std::string not_covered;             // a NOT_COVERED reason, when no contract covers it
  std::vector<TrafficRejection> rejections;  // most calls first
};

struct TrafficResult {
  std::vector<std::string> recordings;
  std::vector<OpTraffic> ops;  // the covered ops first, most calls first within each part
};

TrafficResult hold_to_contracts(const std::vector<RecordedCall>& calls,
                                const std::vector<std::shared_ptr<const Contract>>& contracts,
                                const std::map<std::string, std::string>& not_covered);

}  // namespace opc
