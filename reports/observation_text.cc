#include "reports/observation_text.h"

#include "generators/case.h"
#include "oracles/storage_diff.h"

namespace opc {
namespace {

std::string meta_text(const TensorMeta& m) {
  return std::string(dtype_name(m.dtype)) + shape_text(m.sizes) + " strides " + shape_text(m.strides) +
         " offset " + std::to_string(m.storage_offset);
}

std::string changes_text(const ArgObservation& a) {
  const std::vector<int64_t> changed = changed_elements(a);
  const std::vector<uint8_t> mask = footprint(a.view, a.storage);
  int64_t inside = 0, outside = 0, first = -1;
  for (int64_t e : changed) {
    if (!mask[e]) {
      ++outside;
      continue;
    }
    if (first < 0) first = e;
    ++inside;
  }
  std::string s = inside == 0 ? "unchanged"
                              : std::to_string(inside) + " of " + std::to_string(a.view.numel()) +
                                    " elements changed (first at " + view_index(a.view, a.storage, first) +
                                    ": " + change_text(a, first) + ")";
  if (outside) s += "; " + std::to_string(outside) + " storage elements outside the view changed";
  if (!(a.before == a.after)) s += "; metadata after: " + meta_text(a.after);
  return s;
}

}  // namespace

std::string observation_text(const Observation& obs, const Contract& contract) {
  std::string s;
  if (obs.threw) return "   the op threw: " + obs.error + "\n";
  for (const ArgObservation& a : obs.tensors)
    s += "   argument '" + contract.args[a.arg].name + "': " + meta_text(a.before) + ": " +
         changes_text(a) + "\n";
  for (size_t r = 0; r < obs.returns.size(); ++r) {
    const ReturnObservation& ret = obs.returns[r];
    s += "   return " + std::to_string(r) + ": ";
    if (!ret.is_tensor) {
      s += "not a tensor\n";
      continue;
    }
    if (!ret.value.defined()) {
      s += "undefined\n";
      continue;
    }
    s += meta_text(ret.meta);
    std::string shares;
    for (const ArgObservation& a : obs.tensors)
      if (a.after.storage == ret.meta.storage)
        shares += (shares.empty() ? "'" : ", '") + contract.args[a.arg].name + "'";
    s += shares.empty() ? ", a storage of its own\n" : ", in the storage of " + shares + "\n";
  }
  return s;
}

}  // namespace opc
