#include "check/traffic.h"

#include <algorithm>

namespace opc {
namespace {

// The first contract that admits the call, or the first one's rejection.
Admission admit_by_any(const RecordedCall& call, const std::vector<const Contract*>& covering) {
  Admission first;
  for (size_t i = 0; i < covering.size(); ++i) {
    Admission a = admit(call, *covering[i]);
    if (a.admitted) return a;
    if (i == 0) first = std::move(a);
  }
  return first;
}

// The evidence of one more call rejected as `r` is: its programs, and the value it had.
void join_evidence(TrafficRejection& r, const Admission& a, const RecordedCall& call) {
  for (const std::string& p : call.programs)
    if (std::find(r.programs.begin(), r.programs.end(), p) == r.programs.end()) r.programs.push_back(p);
  if (!a.widen) return;
  if (!r.widen) r.widen = a.widen;
  r.widen->lo = std::min(r.widen->lo, a.widen->lo);
  r.widen->hi = std::max(r.widen->hi, a.widen->hi);
  for (int64_t v : {a.widen->lo, a.widen->hi}) {
    auto at = std::lower_bound(r.values.begin(), r.values.end(), v);
    if ((at == r.values.end() || *at != v) && r.values.size() < kWideningValues) r.values.insert(at, v);
  }
}

void add_rejection(OpTraffic& op, const Admission& a, const RecordedCall& call) {
  auto same = std::find_if(op.rejections.begin(), op.rejections.end(),
                           [&](const TrafficRejection& r) { return r.pattern == a.pattern; });
  if (same == op.rejections.end()) {
    op.rejections.push_back({a.pattern, call.calls, a.detail, recorded_call_text(call)});
    same = op.rejections.end() - 1;
  } else {
    same->calls += call.calls;
  }
  join_evidence(*same, a, call);
}

}  // namespace

TrafficResult hold_to_contracts(const std::vector<RecordedCall>& calls,
                                const std::vector<std::shared_ptr<const Contract>>& contracts,
                                const std::map<std::string, std::string>& not_covered) {
  TrafficResult t;
  std::map<std::string, OpTraffic> by_op;
  for (const RecordedCall& call : calls) {
    OpTraffic& op = by_op[call.op];
    op.op = call.op;
    op.calls += call.calls;
    ++op.signatures;
    std::vector<const Contract*> covering;
    for (const auto& c : contracts)
      if (c->op == call.op) covering.push_back(c.get());
    if (covering.empty()) {
      if (auto why = not_covered.find(call.op); why != not_covered.end()) op.not_covered = why->second;
      continue;
    }
    if (op.contracts.empty())
      for (const Contract* c : covering) op.contracts.push_back(c->file);
    const Admission a = admit_by_any(call, covering);
    if (a.admitted) op.admitted += call.calls;
    else add_rejection(op, a, call);
  }
  for (auto& [name, op] : by_op) {
    std::stable_sort(op.rejections.begin(), op.rejections.end(),
                     [](const auto& a, const auto& b) { return a.calls > b.calls; });
    t.ops.push_back(std::move(op));
  }
  std::stable_sort(t.ops.begin(), t.ops.end(), [](const OpTraffic& a, const OpTraffic& b) {
    if (a.contracts.empty() != b.contracts.empty()) return b.contracts.empty();
    return a.calls > b.calls;
  });
  return t;
}

}  // namespace opc
