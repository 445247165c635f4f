// reads: the results must not depend on memory outside the views the op was handed. The
// judge runs the case again with the guard bands and a view's gaps poisoned (NaN for
// floats); a deterministic op whose results change read there: past a row's end, into the
// next row's padding, past a short weight. Such a read gives wrong values silently, and
// faults only where it crosses a page.
#include "oracles/compare.h"
#include "oracles/oracles.h"

namespace opc {
namespace {

std::string where_text(const ReadsInput& in) {
  if (in.arg < 0) return "the memory around the arguments' views";
  const std::string view = "the view of '" + in.contract.args[in.arg].name + "'";
  switch (in.where) {
    case Surroundings::Gaps:
      return "the gaps between the elements of " + view + " (the elements its strides skip)";
    case Surroundings::PastEnds:
      return "the memory before and past the end of " + view;
    case Surroundings::All:
      break;
  }
  return "the memory around " + view;
}

std::string consequence(const ReadsInput& in) {
  return " changed when only " + where_text(in) +
         " held NaN instead of other garbage: the op reads outside the views it was handed, so its results "
         "depend on whatever the caller's memory holds there, and the read faults where it crosses a page";
}

}  // namespace

std::vector<Finding> check_reads(const ReadsInput& in) {
  const Observation& a = in.first;
  const Observation& b = in.poisoned;
  if (a.threw || b.threw) {
    if (a.threw == b.threw) return {};
    return {
        {Clause::Reads, std::string("whether the op throws") + consequence(in) + ": " + (a.threw ? a.error : b.error)}};
  }
  std::vector<Finding> out;
  for (size_t r = 0; r < a.returns.size() && r < b.returns.size(); ++r) {
    if (!a.returns[r].is_tensor || !a.returns[r].value.defined()) continue;
    if (const std::string diff = bytes_differ(a.returns[r].value, b.returns[r].value); !diff.empty())
      out.push_back({Clause::Reads, "return " + std::to_string(r) + " (" + diff + ")" + consequence(in)});
  }
  for (size_t i = 0; i < a.tensors.size() && i < b.tensors.size(); ++i) {
    const int arg = a.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    if (const std::string diff = bytes_differ(a.tensors[i].view, b.tensors[i].view); !diff.empty())
      out.push_back({Clause::Reads, "argument '" + in.contract.args[arg].name + "' (" + diff + ")" + consequence(in)});
  }
  return out;
}

}  // namespace opc
