// mutation: arguments the schema does not mark mutable must come back bit for bit.
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"

namespace opc {

std::vector<Finding> check_mutation(const OracleInput& in) {
  std::vector<Finding> out;
  for (const ArgObservation& a : in.obs.tensors) {
    const ArgSpec& spec = in.contract.args[a.arg];
    const bool is_mutable = in.registered.mutable_arg[a.arg];
    const std::string meta = metadata_change(a.before, a.after);
    if (!meta.empty()) {
      out.push_back({Clause::Mutation, "argument '" + spec.name + "' " +
                                     (is_mutable ? "is mutable, but the op changed its metadata (" + meta +
                                                       "): Tensor! lets an op write the caller's "
                                                       "elements, not give the tensor a new shape, "
                                                       "dtype or storage. torch.compile runs the op on "
                                                       "a clone and copies it back into the caller's "
                                                       "unchanged tensor, and a CUDA graph replays "
                                                       "into the captured buffer, so callers read "
                                                       "other results than eager gives"
                                                 : "is not mutable in the schema, yet the op changed "
                                                   "its metadata (" + meta +
                                                       "): the caller's tensor is not what it handed "
                                                       "in, and the compiler assumes it unchanged")});
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
    out.push_back({Clause::Mutation, "argument '" + spec.name +
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
