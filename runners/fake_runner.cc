#include "runners/fake_runner.h"

#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "runners/python/bridge.h"

namespace opc {

namespace {

TensorMeta meta_of(const python::FakeTensor& t, const void* storage) {
  TensorMeta m;
  m.sizes = t.sizes;
  m.strides = t.strides;
  m.storage_offset = t.storage_offset;
  m.dtype = t.dtype;
  m.storage = storage;
  return m;
}

// The device each argument's fake claims, by schema index: a `device: cuda` contract's
// tensors are fake CUDA tensors (the case's own are made on the CPU).
std::vector<std::string> fake_devices(const Contract& contract) {
  std::vector<std::string> devices(contract.args.size());
  for (const ArgSpec& a : contract.args)
    if (a.is_tensor && contract.device_of(a) != "cpu") devices[a.index] = contract.device_of(a);
  return devices;
}

}  // namespace

Observation run_fake_pytorch(const OpBinding& op, const Contract& contract, const Case& c,
                             const CaseFacts& facts, bool symbolic) {
  Materialized m = materialize(c, contract, facts);
  Observation obs;
  for (const TensorArg& t : m.tensors) obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, false));
  set_context(contract, c, m.args);
  const python::FakeResult r = python::fake_call(op, m.args, symbolic, fake_devices(contract));
  if (!r.ok) {
    obs.threw = true;
    obs.error = r.error;
    return obs;
  }
  // Storage identities in the oracles' terms: an argument's is its real storage (the fake
  // of a view shares its base's fake storage as the view shares the real one); a fresh
  // return gets an identity of its own, a small number no real storage has.
  for (ArgObservation& a : obs.tensors) {
    a.after = a.before;
    if (auto after = r.args_after.find(a.arg); after != r.args_after.end())
      a.after = meta_of(after->second, a.before.storage);
    a.after.data = a.before.data;
    a.after.impl = a.before.impl;  // the caller's tensor stays itself
  }
  auto storage_of_arg = [&](int arg) -> const void* {
    for (const ArgObservation& a : obs.tensors)
      if (a.arg == arg) return a.before.storage;
    return nullptr;
  };
  for (size_t i = 0; i < r.returns.size(); ++i) {
    const python::FakeTensor& f = r.returns[i];
    ReturnObservation ro;
    ro.is_tensor = f.is_tensor;
    if (f.is_tensor) {
      const void* storage = f.aliases_arg >= 0      ? storage_of_arg(f.aliases_arg)
                            : f.aliases_return >= 0 ? obs.returns[f.aliases_return].meta.storage
                                                    : reinterpret_cast<const void*>(uintptr_t{i + 1});
      ro.meta = meta_of(f, storage);
      for (const ArgObservation& a : obs.tensors)
        if (a.arg == f.is_arg) ro.meta.impl = a.before.impl;  // the argument itself
      // Only its metadata is compared; a placeholder says "a defined tensor" to the oracle.
      ro.value = at::empty({0}, at::TensorOptions().dtype(f.dtype).device(at::kMeta));
    }
    obs.returns.push_back(std::move(ro));
  }
  return obs;
}

Observation run_fake_meta(const OpBinding& op, const Contract& contract, const Case& c,
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
  set_context(contract, c, args);
  observe_after(observe_call(op, args, obs), obs);
  return obs;
}

}  // namespace opc
