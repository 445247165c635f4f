// determinism: the same case, run twice on fresh but identical tensors, gives the same
// bytes in every return and every mutable argument (unless `determinism: none`).
#include "oracles/oracles.h"
#include "runners/compiled_runner.h"

namespace opc {

std::vector<Finding> check_determinism(const DeterminismInput& in) {
  const Observation& a = in.first;
  const Observation& b = in.second;
  if (a.threw || b.threw) {
    if (a.threw != b.threw)
      return {{Clause::Determinism, "the same case threw in one run and not in the other: " +
                                  (a.threw ? a.error : b.error)}};
    return {};
  }
  std::vector<Finding> out;
  for (size_t r = 0; r < a.returns.size() && r < b.returns.size(); ++r)
    if (a.returns[r].is_tensor && dense_bytes(a.returns[r].value) != dense_bytes(b.returns[r].value))
      out.push_back({Clause::Determinism, "return " + std::to_string(r) +
                                        " differs between two runs of the same case: the op is "
                                        "nondeterministic. Replays (CUDA graphs, recompiles) and "
                                        "tests will disagree; say `determinism: none` if meant."});
  for (size_t i = 0; i < a.tensors.size() && i < b.tensors.size(); ++i)
    if (in.registered.mutable_arg[a.tensors[i].arg] &&
        dense_bytes(a.tensors[i].view) != dense_bytes(b.tensors[i].view))
      out.push_back({Clause::Determinism, "argument '" + in.contract.args[a.tensors[i].arg].name +
                                        "' holds different bytes after two runs of the same case: "
                                        "the op is nondeterministic."});
  return out;
}

}  // namespace opc
