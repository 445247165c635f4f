#include "runners/eager_runner.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstring>

#include "ops/sim_context.h"

namespace opc {

TensorMeta TensorMeta::of(const at::Tensor& t) {
  TensorMeta m;
  if (!t.defined()) return m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.storage_offset = t.storage_offset();
  m.dtype = t.scalar_type();
  m.storage = t.storage().unsafeGetStorageImpl();
  m.impl = t.unsafeGetTensorImpl();
  m.data = t.storage().data();
  return m;
}

void set_context(const Contract& contract, const Case& c) {
  for (const auto& v : contract.values)
    if (v.is_context) sim::set_int(v.name, c.values[v.slot]);
}

std::vector<c10::IValue> call_boxed(const OpBinding& op, const std::vector<c10::IValue>& args) {
  // The contract is about the backend and Meta kernels, as opcheck's tests are.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  torch::jit::Stack stack(args.begin(), args.end());
  op.handle.callBoxed(&stack);
  return stack;
}

namespace {

Observation call_observed(const OpBinding& op, const Contract& contract, const Case& c,
                          Materialized m, bool snapshot) {
  Observation obs;
  obs.tensors.reserve(m.tensors.size());
  for (const TensorArg& t : m.tensors) {
    ArgObservation a;
    a.arg = t.arg;
    a.storage = t.storage;
    a.view = t.view;
    a.before = TensorMeta::of(t.view);
    const size_t n = snapshot ? t.storage.nbytes() : 0;
    a.bytes_before.resize(n);
    if (n) std::memcpy(a.bytes_before.data(), t.storage.data_ptr(), n);
    obs.tensors.push_back(std::move(a));
  }
  set_context(contract, c);
  std::vector<c10::IValue> rets;
  try {
    rets = call_boxed(op, m.args);
  } catch (const std::exception& e) {
    obs.threw = true;
    obs.error = e.what();
    obs.error = obs.error.substr(0, obs.error.find("\nException raised from"));
  }
  m.args.clear();  // drop our references so only the observation keeps the tensors
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

}  // namespace

Observation run_eager(const OpBinding& op, const Contract& contract, const Case& c,
                      Materialized m) {
  return call_observed(op, contract, c, std::move(m), true);
}

Observation rerun_eager(const OpBinding& op, const Contract& contract, const Case& c,
                        Materialized m) {
  return call_observed(op, contract, c, std::move(m), false);
}

}  // namespace opc
