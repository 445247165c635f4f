// alias: what a return may share with the inputs and the other returns.
#include <c10/util/irange.h>

#include <algorithm>

#include "generators/case.h"
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"

namespace opc {
namespace {

// [first, last) bytes a tensor's elements span; empty for an empty tensor.
std::pair<uintptr_t, uintptr_t> byte_span(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {0, 0};
  int64_t lo = 0, hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = t.stride(d) * (t.size(d) - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  const auto base = reinterpret_cast<uintptr_t>(t.data_ptr());
  const int64_t item = t.element_size();
  return {base + lo * item, base + (hi + 1) * item};
}

std::pair<uintptr_t, uintptr_t> storage_span(const at::Tensor& t) {
  const auto base = reinterpret_cast<uintptr_t>(t.storage().data());
  return {base, base + t.storage().nbytes()};
}

bool overlap(std::pair<uintptr_t, uintptr_t> a, std::pair<uintptr_t, uintptr_t> b) {
  return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
}

// Whether `t` occupies an element of the view `a` was handed. Views of one buffer
// interleave (the key and value rows of each block), so their byte spans overlap while
// their elements do not.
bool touches_view(const at::Tensor& t, const ArgObservation& a) {
  if (t.element_size() != a.storage.element_size()) return true;  // not comparable: assume so
  const std::vector<uint8_t> mine = footprint(t, a.storage), theirs = footprint(a.view, a.storage);
  for (size_t e = 0; e < mine.size(); ++e)
    if (mine[e] && theirs[e]) return true;
  return false;
}

const char* kConsequence =
    " torch.compile's custom-op aliasing guard rejects such an op (\"may not alias any inputs "
    "to this custom operator or other returns\"), and passes that trust the schema may reuse "
    "or overwrite the shared memory. Return a fresh tensor (e.g. a clone), or annotate the "
    "alias in the schema.";

}  // namespace

std::vector<Finding> check_alias(const OracleInput& in) {
  std::vector<Finding> out;
  const auto& rets = in.obs.returns;
  for (size_t r = 0; r < rets.size(); ++r) {
    if (!rets[r].is_tensor || !rets[r].value.defined()) continue;
    const TensorMeta& rm = rets[r].meta;
    const int allowed = r < in.registered.return_alias.size() ? in.registered.return_alias[r] : -1;
    const std::string ret = "return " + std::to_string(r);
    // Views of one buffer share a StorageImpl: a return aliasing the argument it may alias
    // shares it with that argument's siblings too, and aliases a sibling only by overlap.
    const auto allowed_obs = std::find_if(in.obs.tensors.begin(), in.obs.tensors.end(),
                                          [&](const ArgObservation& a) { return a.arg == allowed; });
    const void* allowed_storage = allowed_obs == in.obs.tensors.end() ? nullptr : allowed_obs->after.storage;
    for (const ArgObservation& a : in.obs.tensors) {
      if (a.arg == allowed) continue;
      if (allowed_storage && a.after.storage == allowed_storage && !touches_view(rets[r].value, a)) continue;
      const std::string& name = in.contract.args[a.arg].name;
      const std::string unannotated =
          allowed < 0 ? " but the schema gives the return no alias annotation."
                      : " but the schema lets it alias only '" + in.contract.args[allowed].name + "'.";
      if (rm.impl && rm.impl == a.after.impl) {
        out.push_back({Clause::Alias, ret + " is argument '" + name + "' itself (the same tensor)" +
                                    unannotated + kConsequence});
      } else if (rm.storage == a.after.storage) {
        out.push_back({Clause::Alias, ret + " shares storage with argument '" + name +
                                    "' (same StorageImpl; the return has sizes " + shape_text(rm.sizes) +
                                    ", storage offset " + std::to_string(rm.storage_offset) + ")" +
                                    unannotated + kConsequence});
      } else if (overlap(byte_span(rets[r].value), storage_span(a.view))) {
        out.push_back({Clause::Alias, ret + " overlaps the memory of argument '" + name +
                                    "' through a different StorageImpl (e.g. from_blob over its "
                                    "bytes)" + unannotated + kConsequence});
      }
    }
    for (size_t q = 0; q < r; ++q) {
      if (!rets[q].is_tensor || !rets[q].value.defined()) continue;
      const int other = q < in.registered.return_alias.size() ? in.registered.return_alias[q] : -1;
      if (allowed >= 0 && allowed == other) continue;  // both views of one annotated input
      const bool same = rets[q].meta.storage == rm.storage;
      if (same || overlap(byte_span(rets[q].value), byte_span(rets[r].value)))
        out.push_back({Clause::Alias, "returns " + std::to_string(q) + " and " + std::to_string(r) +
                                    (same ? " share one StorageImpl" : " overlap in memory") +
                                    "; the schema says nothing of it." + kConsequence});
    }
  }
  return out;
}

}  // namespace opc
