// extent: an op must not write outside the view it was given.
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"
#include "runners/materialize.h"

namespace opc {

std::vector<Finding> check_extent(const OracleInput& in) {
  std::vector<Finding> out;
  for (const ArgObservation& a : in.obs.tensors) {
    if (unchanged_outside_gapless_view(a)) continue;
    const std::vector<int64_t> changed = changed_elements(a);
    const std::vector<uint8_t> mask = footprint(a.view, a.storage);
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
                            : "in the base between the view's elements (a gap of its strides)";
    const int64_t view_start = a.view.storage_offset();
    out.push_back({"extent", "the op wrote " + std::to_string(outside) +
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
