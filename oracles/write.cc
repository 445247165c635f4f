// write: a declared output must be written where declared, and only there.
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"
#include "runners/materialize.h"

namespace opc {

std::vector<Finding> check_write(const OracleInput& in) {
  std::vector<Finding> out;
  const EvalInput facts = in.facts.input();
  for (const ArgObservation& a : in.obs.tensors) {
    const MutateSpec* ms = in.contract.mutate_spec(a.arg);
    if (!ms) continue;
    const std::string& name = in.contract.args[a.arg].name;
    const at::Tensor region = region_of(a.view, ms->writes, facts);
    const std::string where = ms->writes.all ? "" : " " + ms->writes.text;
    if (ms->sentinel) {
      int64_t first = -1;
      const int64_t left = elements_holding(region, a.storage, sentinel_bytes(a.storage.scalar_type()), first);
      if (left > 0)
        out.push_back({Clause::Write, "output '" + name + "' still holds the sentinel in " +
                                    std::to_string(left) + " of the " +
                                    std::to_string(region.numel()) +
                                    " elements of its declared region" + where + " (first at " +
                                    view_index(a.view, a.storage, first) +
                                    "): the op did not write the caller's buffer there, so the "
                                    "caller reads stale memory (a \"phantom tensor\")."});
    }
    if (ms->rest_untouched && !ms->writes.all) {
      const std::vector<uint8_t> region_mask = footprint(region, a.storage);
      const std::vector<uint8_t> view_mask = footprint(a.view, a.storage);
      int64_t stray = 0, first = -1;
      for (int64_t e : changed_elements(a))
        if (view_mask[e] && !region_mask[e]) {
          ++stray;
          if (first < 0) first = e;
        }
      if (stray > 0)
        out.push_back({Clause::Write, "the op changed " + std::to_string(stray) + " element(s) of '" +
                                    name + "' outside its declared region" + where +
                                    " (first at " + view_index(a.view, a.storage, first) + ": " +
                                    change_text(a, first) +
                                    "), which the contract says stays untouched."});
    }
  }
  return out;
}

}  // namespace opc
