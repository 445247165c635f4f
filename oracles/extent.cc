// extent: an op must not write outside the view it was given (outside every view it was
// given of a storage several arguments share: a write into a sibling view is mutation's or
// the sibling's own).
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"
#include "runners/materialize.h"

namespace opc {

namespace {

// Elements of a's storage inside a view handed to the op: a's, and those of the arguments
// that share the storage. Empty when an earlier argument shares it (judged there).
std::vector<uint8_t> handed_elements(const ArgObservation& a, const std::vector<ArgObservation>& all) {
  std::vector<uint8_t> mask;
  for (const ArgObservation& b : all) {
    if (b.storage.data_ptr() != a.storage.data_ptr()) continue;
    if (&b < &a) return {};
    const std::vector<uint8_t> more = footprint(b.view, b.storage);
    if (mask.empty()) mask = more;
    else
      for (size_t e = 0; e < mask.size(); ++e) mask[e] |= more[e];
  }
  return mask;
}

}  // namespace

std::vector<Finding> check_extent(const OracleInput& in) {
  std::vector<Finding> out;
  for (const ArgObservation& a : in.obs.tensors) {
    if (unchanged_outside_gapless_view(a)) continue;
    const std::vector<uint8_t> mask = handed_elements(a, in.obs.tensors);
    if (mask.empty()) continue;
    const std::vector<int64_t> changed = changed_elements(a);
    int64_t outside = 0, first = -1;
    for (int64_t e : changed)
      if (!mask[e]) {
        ++outside;
        if (first < 0) first = e;
      }
    if (outside == 0) continue;
    const int64_t storage_elems = a.storage.numel();
    const char* where = first < kGuardElems || first >= storage_elems - kGuardElems
                            ? "in the guard band around the view's base"
                            : "in the base between the elements of the views handed in (a gap of their strides)";
    const int64_t view_start = a.view.storage_offset();
    out.push_back({Clause::Extent, "the op wrote " + std::to_string(outside) +
                                 " element(s) outside the view of '" +
                                 in.contract.args[a.arg].name + "' (first " + where + ", " +
                                 std::to_string(first - view_start) +
                                 " elements from the view's first element: " + change_text(a, first) +
                                 "). It writes memory the caller did not hand it: neighbouring "
                                 "tensors of a larger buffer get corrupted."});
  }
  return out;
}

}  // namespace opc
