#include "runners/compiled_runner.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "runners/eager_runner.h"
#include "runners/materialize.h"

namespace opc {
namespace {

// "ns::name" + overload -> "ns.name.default", as an OpOverload prints in Python.
std::string python_name(const c10::OperatorHandle& handle) {
  const c10::OperatorName& n = handle.operator_name();
  std::string s = n.name;
  if (size_t p = s.find("::"); p != std::string::npos) s.replace(p, 2, ".");
  return s + "." + (n.overload_name.empty() ? "default" : n.overload_name);
}

bool returns_annotated(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns())
    if (r.alias_info()) return true;
  return false;
}

}  // namespace

std::vector<uint8_t> dense_bytes(const at::Tensor& t) {
  if (!t.defined()) return {};
  const at::Tensor dense = t.contiguous();
  std::vector<uint8_t> b(dense.nbytes());
  if (!b.empty()) std::memcpy(b.data(), dense.data_ptr(), b.size());
  return b;
}

std::string aliasing_guard_message(const std::string& op_name) {
  return op_name +
         " (with implementation in ?\?\?): The output of this custom operator (1) must not also be "
         "an input to this custom operator and (2) may not alias any inputs to this custom "
         "operator or other returns. The most common way to trigger this error is if we have y "
         "= custom_op(x) and y and x are the same Tensor. Please instead return a clone of the "
         "offending output tensor(s) (e.g. return x.clone()) or refactor the custom operator to "
         "not return y.";
}

CompiledObservation run_compiled(const OpBinding& op, const Contract& contract, const Case& c,
                                 const CaseFacts& facts, int padding_variant) {
  CompiledObservation out;
  Materialized m = materialize(c, contract, facts);
  if (padding_variant >= 0) fill_padding(m, contract, facts.input(), padding_variant);
  std::vector<c10::IValue> args = m.args;
  struct Clone {
    int arg;
    at::Tensor view, clone;  // the caller's tensor, its functional clone
    TensorMeta before;
  };
  std::vector<Clone> clones;
  for (const TensorArg& t : m.tensors) {
    if (!op.annotations.mutable_arg[t.arg]) continue;
    at::Tensor clone = at::empty_strided(t.view.sizes(), t.view.strides(), t.view.options());
    clone.copy_(t.view);
    args[t.arg] = clone;
    clones.push_back({t.arg, t.view, clone, TensorMeta::of(clone)});
  }
  for (const TensorArg& t : m.tensors) out.obs.tensors.push_back(observe_arg(t.arg, t.storage, t.view, false));
  set_context(contract, c, args);
  const std::vector<c10::IValue> rets = observe_call(op, args, out.obs);
  if (out.obs.threw) return out;
  if (!returns_annotated(op.handle.schema())) {
    std::unordered_set<const void*> seen;
    for (const c10::IValue& a : args)
      if (a.isTensor()) seen.insert(a.toTensor().storage().unsafeGetStorageImpl());
    for (const c10::IValue& r : rets)
      if (r.isTensor() && r.toTensor().defined() &&
          !seen.insert(r.toTensor().storage().unsafeGetStorageImpl()).second) {
        out.guard_error = aliasing_guard_message(python_name(op.handle));
        break;
      }
  }
  for (const Clone& c : clones) {
    const TensorMeta after = TensorMeta::of(c.clone);
    if (after == c.before) c.view.copy_(c.clone);
    else out.clone_changes.push_back({c.arg, c.before, after});
  }
  observe_after(rets, out.obs);
  // Dead inputs: after the op, Inductor may hand a non-mutable input's buffer to someone
  // else. A return that reads that memory changes with it.
  for (const ReturnObservation& r : out.obs.returns)
    out.return_bytes.push_back(r.is_tensor ? dense_bytes(r.value) : std::vector<uint8_t>{});
  if (padding_variant >= 0) return out;
  for (const TensorArg& t : m.tensors) {
    if (op.annotations.mutable_arg[t.arg]) continue;
    // A storage several arguments are views of dies only where this input lies in it.
    const bool shared = std::any_of(m.tensors.begin(), m.tensors.end(), [&](const TensorArg& o) {
      return o.arg != t.arg && o.storage.data_ptr() == t.storage.data_ptr();
    });
    if (!shared) {
      std::memset(t.storage.data_ptr(), 0x7F, t.storage.nbytes());
      continue;
    }
    at::Tensor junk = at::empty(t.view.sizes(), t.view.options());
    std::memset(junk.data_ptr(), 0x7F, junk.nbytes());
    t.view.copy_(junk);
  }
  for (size_t r = 0; r < out.obs.returns.size(); ++r) {
    const ReturnObservation& ro = out.obs.returns[r];
    if (ro.is_tensor && ro.value.defined() && dense_bytes(ro.value) != out.return_bytes[r])
      out.changed_by_dead_inputs.push_back(static_cast<int>(r));
  }
  return out;
}

}  // namespace opc
