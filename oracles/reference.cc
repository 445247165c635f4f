// reference: eager results differ from the contract's reference op (plain ATen, the same
// schema, run on the same case) beyond the contract's tolerance for the dtype.
#include "oracles/compare.h"
#include "oracles/oracles.h"

namespace opc {

std::vector<Finding> check_reference(const ReferenceInput& in) {
  const Observation& op = in.eager;
  const Observation& ref = in.reference;
  if (op.threw) return {};  // the crash clause speaks for it
  const std::string who = "the reference " + in.contract.reference;
  if (ref.threw)
    return {{Clause::Reference, who + " threw on a case the op accepted: " + ref.error +
                              " (fix the reference or tighten the contract)"}};
  std::vector<Finding> out;
  for (size_t r = 0; r < op.returns.size() && r < ref.returns.size(); ++r) {
    if (!op.returns[r].is_tensor || !op.returns[r].value.defined()) continue;
    const std::string diff = beyond_tolerance(op.returns[r].value, ref.returns[r].value,
                                              in.contract.tolerance_for(op.returns[r].value.scalar_type()));
    if (!diff.empty())
      out.push_back({Clause::Reference, "return " + std::to_string(r) + " differs from " + who + ": " + diff});
  }
  for (size_t i = 0; i < op.tensors.size() && i < ref.tensors.size(); ++i) {
    const int arg = op.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    const at::Tensor& v = op.tensors[i].view;
    const std::string diff = beyond_tolerance(v, ref.tensors[i].view, in.contract.tolerance_for(v.scalar_type()));
    if (!diff.empty())
      out.push_back({Clause::Reference, "argument '" + in.contract.args[arg].name + "' differs from " +
                                      who + ": " + diff});
  }
  return out;
}

}  // namespace opc
