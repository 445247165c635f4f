// compiled: what torch.compile does to an opaque custom op must not change its meaning.
#include <algorithm>

#include "generators/case.h"
#include "oracles/oracles.h"
#include "runners/compiled_runner.h"

namespace opc {
namespace {

// The first differing element of two dense byte images, as "[i, j]".
std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                             const at::Tensor& like) {
  const size_t item = like.element_size();
  size_t e = 0;
  while ((e + 1) * item <= std::min(a.size(), b.size()) &&
         std::equal(a.begin() + e * item, a.begin() + (e + 1) * item, b.begin() + e * item))
    ++e;
  std::vector<int64_t> idx(like.dim());
  for (int64_t d = like.dim() - 1; d >= 0; --d) {
    const int64_t size = std::max<int64_t>(like.size(d), 1);
    idx[d] = static_cast<int64_t>(e) % size;
    e /= size;
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

}  // namespace

std::vector<Finding> check_compiled(const CompiledInput& in) {
  const Observation& eager = in.eager;
  const CompiledObservation& compiled = in.compiled;
  if (eager.threw) return {};  // the crash clause reports it
  if (compiled.obs.threw)
    return {{Clause::Compiled, "called the way torch.compile calls it (mutable arguments cloned), the op "
                         "threw where eager did not: " + compiled.obs.error}};
  std::vector<Finding> out;
  if (!compiled.guard_error.empty())
    out.push_back({Clause::Compiled, "torch.compile's custom-op aliasing guard fires: " + compiled.guard_error});
  for (const auto& change : compiled.clone_changes)
    out.push_back({Clause::Compiled, "argument '" + in.contract.args[change.arg].name +
                                   "' is mutable, and the op changed the metadata of the "
                                   "functional clone torch.compile hands it (" +
                                   metadata_change(change.before, change.after) +
                                   "): the result cannot be copied back into the caller's "
                                   "tensor, which keeps its old shape and contents."});
  for (int r : compiled.changed_by_dead_inputs)
    out.push_back({Clause::Compiled, "return " + std::to_string(r) +
                                   " changed when the op's non-mutable inputs were overwritten after "
                                   "the call: it reads their memory. Inductor may reuse a dead "
                                   "input's buffer, so the compiled program reads garbage."});
  for (size_t r = 0; r < eager.returns.size() && r < compiled.obs.returns.size(); ++r) {
    const ReturnObservation& e = eager.returns[r];
    if (!e.is_tensor || !e.value.defined()) continue;
    const std::vector<uint8_t> want = dense_bytes(e.value);
    if (compiled.obs.returns[r].meta.sizes != e.meta.sizes || compiled.return_bytes[r] != want)
      out.push_back({Clause::Compiled, "return " + std::to_string(r) +
                                     " differs from eager when the op runs on functionalized "
                                     "clones (first at " +
                                     first_difference(want, compiled.return_bytes[r], e.value) +
                                     "): the op's result depends on whether its mutable "
                                     "arguments alias the caller's tensors."});
  }
  for (size_t i = 0; i < eager.tensors.size() && i < compiled.obs.tensors.size(); ++i) {
    const ArgObservation& e = eager.tensors[i];
    if (!in.registered.mutable_arg[e.arg]) continue;
    auto not_copied_back = [&](const auto& change) { return change.arg == e.arg; };
    if (std::any_of(compiled.clone_changes.begin(), compiled.clone_changes.end(), not_copied_back))
      continue;  // reported above
    const std::vector<uint8_t> want = dense_bytes(e.view), got = dense_bytes(compiled.obs.tensors[i].view);
    if (want != got)
      out.push_back({Clause::Compiled, "argument '" + in.contract.args[e.arg].name +
                                     "' after copy-back differs from eager (first at " +
                                     first_difference(want, got, e.view) +
                                     "): written through a clone, the op computes something else."});
  }
  return out;
}

std::vector<Finding> check_torch_compile(const TorchCompileInput& in) {
  const Observation& eager = in.eager;
  const Observation& compiled = in.compiled;
  if (eager.threw) return {};  // the crash clause reports it
  const std::string how = "through torch.compile(backend=\"" + in.backend + "\", fullgraph=True, dynamic=True)";
  if (compiled.threw)
    return {{Clause::Compiled, "called " + how + " as vLLM's compiled model calls it, the op fails where eager "
                         "runs: " + compiled.error}};
  std::vector<Finding> out;
  if (compiled.returns.size() != eager.returns.size())
    return {{Clause::Compiled, how + ", the op returns " + std::to_string(compiled.returns.size()) +
                             " values, eager " + std::to_string(eager.returns.size())}};
  for (size_t r = 0; r < eager.returns.size(); ++r) {
    const ReturnObservation& e = eager.returns[r];
    const ReturnObservation& c = compiled.returns[r];
    if (!e.is_tensor || !e.value.defined()) continue;
    const std::vector<uint8_t> want = dense_bytes(e.value);
    const std::vector<uint8_t> got = c.is_tensor ? dense_bytes(c.value) : std::vector<uint8_t>{};
    if (!c.is_tensor || c.meta.sizes != e.meta.sizes || c.meta.dtype != e.meta.dtype || got != want)
      out.push_back({Clause::Compiled, "return " + std::to_string(r) + " " + how + " differs from eager (" +
                                     (c.meta.sizes != e.meta.sizes ? "sizes " + shape_text(c.meta.sizes) +
                                                                         " vs " + shape_text(e.meta.sizes)
                                                                   : "first at " + first_difference(want, got, e.value)) +
                                     ")."});
  }
  for (size_t i = 0; i < eager.tensors.size() && i < compiled.tensors.size(); ++i) {
    const ArgObservation& e = eager.tensors[i];
    if (!in.registered.mutable_arg[e.arg]) continue;
    const std::vector<uint8_t> want = dense_bytes(e.view), got = dense_bytes(compiled.tensors[i].view);
    if (want != got)
      out.push_back({Clause::Compiled, "argument '" + in.contract.args[e.arg].name + "' " + how +
                                     " differs from eager after the call (first at " +
                                     first_difference(want, got, e.view) + ")."});
  }
  return out;
}

}  // namespace opc
