#include "runners/fake_runner.h"

#include "runners/eager_runner.h"
#include "runners/materialize.h"

namespace opc {

Observation run_fake(const OpBinding& op, const Contract& contract, const Case& c,
                     const CaseFacts& facts) {
  Observation obs;
  std::vector<c10::IValue> args;
  args.reserve(contract.args.size());
  for (const auto& a : contract.args) {
    if (!a.is_tensor) {
      args.push_back(scalar_arg(c, contract, a));
      continue;
    }
    const TensorCase& t = std::get<TensorCase>(c.args[a.index]);
    if (t.none) {
      args.emplace_back();
      continue;
    }
    // The same guarded storage as eager's, so storage offsets match element for element.
    const Geometry& g = facts.geometry(a.index);
    at::Tensor storage = at::empty({kGuardElems + g.storage_elems + kGuardElems},
                                   at::TensorOptions().dtype(t.dtype).device(at::kMeta));
    at::Tensor view = storage.as_strided(g.sizes, g.strides, kGuardElems + g.offset);
    obs.tensors.push_back(observe_arg(a.index, storage, view, false));
    args.emplace_back(view);
  }
  set_context(contract, c);
  observe_after(observe_call(op, args, obs), obs);
  return obs;
}

}  // namespace opc
