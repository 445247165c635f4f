// mutation: arguments the schema does not mark mutable must come back bit for bit.
#include "generators/case.h"
#include "runners/oracles/oracles.h"
#include "runners/oracles/storage_diff.h"

namespace opc {
namespace {

// What about a tensor's identity changed, or "" when nothing did.
std::string metadata_change(const TensorMeta& b, const TensorMeta& a) {
  std::string s;
  auto add = [&](const std::string& what) { s += (s.empty() ? "" : "; ") + what; };
  if (b.sizes != a.sizes) add("sizes " + shape_text(b.sizes) + " -> " + shape_text(a.sizes));
  if (b.strides != a.strides) add("strides " + shape_text(b.strides) + " -> " + shape_text(a.strides));
  if (b.storage_offset != a.storage_offset)
    add("storage offset " + std::to_string(b.storage_offset) + " -> " + std::to_string(a.storage_offset));
  if (b.dtype != a.dtype) add("dtype changed");
  if (b.storage != a.storage) add("it was re-pointed to another storage");
  else if (b.data != a.data) add("its storage was reallocated");
  return s;
}

}  // namespace

std::vector<Finding> check_mutation(const OracleInput& in) {
  std::vector<Finding> out;
  for (const ArgObservation& a : in.obs.tensors) {
    const ArgSpec& spec = in.contract.args[a.arg];
    const bool is_mutable = in.registered.mutable_arg[a.arg];
    const std::string meta = metadata_change(a.before, a.after);
    if (!meta.empty()) {
      out.push_back({"mutation", "argument '" + spec.name + "' " +
                                     (is_mutable ? "is mutable, but the contract does not let "
                                                      "the op resize or re-point it: "
                                                    : "is not mutable in the schema, yet its "
                                                      "metadata changed: ") +
                                     meta});
      continue;
    }
    if (is_mutable) continue;
    // A functional op writing an input donated to its maybe_inplace twin is donation's.
    if (in.contract.donates && in.contract.donates->donated(a.arg)) continue;
    const std::vector<int64_t> changed = changed_elements(a);
    if (changed.empty()) continue;
    const std::vector<uint8_t> mask = footprint(a.view, a.storage);
    int64_t inside = 0, first = -1;
    for (int64_t e : changed)
      if (mask[e]) {
        ++inside;
        if (first < 0) first = e;
      }
    if (inside == 0) continue;  // writes outside the view are extent's
    out.push_back({"mutation", "argument '" + spec.name +
                                   "' is not mutable in the schema (no Tensor! annotation), but "
                                   "the op changed " + std::to_string(inside) + " of its " +
                                   std::to_string(a.view.numel()) + " elements (first at " +
                                   view_index(a.view, a.storage, first) + ": " +
                                   change_text(a, first) +
                                   "). Functionalization and reinplacing assume it is unchanged; "
                                   "declare it mutable (Tensor!) or write a copy."});
  }
  return out;
}

}  // namespace opc
