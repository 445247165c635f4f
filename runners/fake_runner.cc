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
      std::visit([&](const auto& v) { args.emplace_back(v); }, std::get<ScalarValue>(c.args[a.index]));
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
    ArgObservation ao;
    ao.arg = a.index;
    ao.storage = storage;
    ao.view = view;
    ao.before = TensorMeta::of(view);
    obs.tensors.push_back(std::move(ao));
    args.emplace_back(view);
  }
  set_context(contract, c);
  std::vector<c10::IValue> rets;
  try {
    rets = call_boxed(op, args);
  } catch (const std::exception& e) {
    obs.threw = true;
    obs.error = e.what();
    obs.error = obs.error.substr(0, obs.error.find("\nException raised from"));
  }
  for (ArgObservation& a : obs.tensors) a.after = TensorMeta::of(a.view);
  for (const c10::IValue& r : rets) {
    ReturnObservation ro;
    ro.is_tensor = r.isTensor();
    if (ro.is_tensor) {
      ro.value = r.toTensor();
      ro.meta = TensorMeta::of(ro.value);
    }
    obs.returns.push_back(std::move(ro));
  }
  return obs;
}

}  // namespace opc
