#include "runners/eager_runner.h"

#include <ATen/TensorUtils.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstring>

#include "ops/sim_context.h"
#include "runners/python/bridge.h"
#include "support/error_text.h"

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

namespace {

// The python_state hook builds the process state and hands back the {state: NAME} arguments.
void build_python_state(const Contract& contract, const Case& c, std::vector<c10::IValue>& args) {
  python::StateCase state;
  for (const auto& v : contract.values) state.values[v.name] = c.values[v.slot];
  std::map<int, std::string> wanted;
  for (const auto& a : contract.args) {
    state.arg_names.push_back(a.name);
    if (!a.from_state.empty()) wanted[a.index] = a.from_state;
  }
  state.seed = c.data_seed;
  python::build_state(contract.python_state, state, *contract.schema, wanted, args);
}

// Tensors the python_state hook made (a packed weight, a oneDNN handle) are inputs like the
// drawn ones: observed on their whole storage, so mutation and extent judge them too.
void observe_state_tensors(const Contract& contract, const std::vector<c10::IValue>& args, bool snapshot,
                           Observation& obs) {
  for (const auto& a : contract.args) {
    if (a.from_state.empty() || !args[a.index].isTensor()) continue;
    const at::Tensor& t = args[a.index].toTensor();
    const int64_t elems = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
    obs.tensors.push_back(observe_arg(a.index, t.as_strided({elems}, {1}, 0), t, snapshot));
  }
}

}  // namespace

void set_context(const Contract& contract, const Case& c) {
  std::map<std::string, int64_t> values;
  for (const auto& v : contract.values)
    if (v.is_context) {
      sim::set_int(v.name, c.values[v.slot]);
      values[v.name] = c.values[v.slot];
    }
  // The fake mode reuses a fake's answer within one context only: it hears of the values
  // even where no Python hook reads them.
  if (!contract.python_context.empty())
    python::set_context(contract.python_context, values);
  else if (!values.empty() && python::available())
    python::set_context("", values);
}

void set_context(const Contract& contract, const Case& c, std::vector<c10::IValue>& args) {
  set_context(contract, c);
  if (!contract.python_state.empty()) build_python_state(contract, c, args);
}

std::vector<c10::IValue> call_boxed(const OpBinding& op, const std::vector<c10::IValue>& args) {
  // The contract is about the backend and Meta kernels, as opcheck's tests are.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  torch::jit::Stack stack(args.begin(), args.end());
  op.handle.callBoxed(&stack);
  return stack;
}

ArgObservation observe_arg(int arg, const at::Tensor& storage, const at::Tensor& view, bool snapshot) {
  ArgObservation a;
  a.arg = arg;
  a.storage = storage;
  a.view = view;
  a.before = TensorMeta::of(view);
  if (snapshot) {
    const auto* bytes = static_cast<const uint8_t*>(storage.data_ptr());
    a.bytes_before.assign(bytes, bytes + storage.nbytes());
  }
  return a;
}

std::vector<c10::IValue> observe_call(const OpBinding& op, const std::vector<c10::IValue>& args,
                                      Observation& obs) {
  try {
    return call_boxed(op, args);
  } catch (const std::exception& e) {
    obs.threw = true;
    obs.error = error_text(e);
    return {};
  } catch (...) {
    // The op threw something that is not an exception object (throw 42): still its throw.
    obs.threw = true;
    obs.error = "an exception that is not a std::exception (such as a thrown int)";
    return {};
  }
}

void observe_after(const std::vector<c10::IValue>& rets, Observation& obs) {
  for (ArgObservation& a : obs.tensors) {
    a.after = TensorMeta::of(a.view);
    // The op changed what the tensor is: judge the caller's memory through its own geometry.
    if (!(a.after == a.before))
      a.view = a.storage.as_strided(a.before.sizes, a.before.strides, a.before.storage_offset);
  }
  for (const c10::IValue& r : rets) {
    ReturnObservation ro;
    ro.is_tensor = r.isTensor();
    if (ro.is_tensor) {
      ro.value = r.toTensor();
      ro.meta = TensorMeta::of(ro.value);
    }
    obs.returns.push_back(std::move(ro));
  }
}

namespace {

Observation call_observed(const OpBinding& op, const Contract& contract, const Case& c,
                          Materialized m, bool snapshot) {
  Observation obs;
  obs.tensors.reserve(m.tensors.size());
  for (const TensorArg& t : m.tensors) obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, snapshot));
  set_context(contract, c, m.args);
  observe_state_tensors(contract, m.args, snapshot, obs);
  const std::vector<c10::IValue> rets = observe_call(op, m.args, obs);
  m.args.clear();  // drop our references so only the observation keeps the tensors
  observe_after(rets, obs);
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

std::optional<Observation> run_in_form(const OpBinding& op, const Contract& contract, const Case& c,
                                       Materialized m, int arg, const std::vector<int64_t>& sizes) {
  for (TensorArg& t : m.tensors) {
    if (t.arg != arg) continue;
    const auto strides = at::detail::computeStride(t.view.sizes(), t.view.strides(), sizes);
    if (!strides) return std::nullopt;
    t.view = t.view.as_strided(sizes, *strides, t.view.storage_offset());
    m.args[arg] = t.view;
    return call_observed(op, contract, c, std::move(m), false);
  }
  return std::nullopt;
}

Observation run_in_place(const OpBinding& op, const Contract& contract, const Case& c,
                         Materialized m) {
  const InplaceSpec& s = contract.inplace.at(c.inplace);
  m.args[s.into] = m.args[s.from];
  return call_observed(op, contract, c, std::move(m), false);
}

}  // namespace opc
