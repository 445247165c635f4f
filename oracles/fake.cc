// fake: the op's fake (its Meta kernel or Python fake) must predict eager's returns: sizes, dtype, strides of the dims
// that matter, storage offset, and which inputs each return aliases.
#include <algorithm>
#include <optional>

#include "generators/case.h"
#include "oracles/oracles.h"

namespace opc {
namespace {

// Strides of dims of size 1 (and of empty tensors) never change an element's address.
bool same_significant_strides(const TensorMeta& a, const TensorMeta& b) {
  for (int64_t s : a.sizes)
    if (s == 0) return true;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

// The tensor arguments (schema indices) whose storage a return shares.
std::vector<int> aliased_args(const ReturnObservation& r, const Observation& obs) {
  std::vector<int> out;
  for (const ArgObservation& a : obs.tensors)
    if (r.meta.storage == a.after.storage) out.push_back(a.arg);
  return out;
}

// The dispatcher's words for it differ across LibTorch versions.
bool missing_meta_kernel(const std::string& error) {
  return (error.find("Could not run") != std::string::npos && error.find("'Meta'") != std::string::npos) ||
         error.find("no fake impl or Meta kernel registered") != std::string::npos ||
         error.find("UnsupportedOperatorException") != std::string::npos;
}

// What the contract's `returns:` promises for return r, evaluated on the case (`obs` is the
// run whose arguments' dtypes a copied dtype follows), against `got`.
std::string contract_mismatch(const Contract& contract, const CaseFacts& facts, const Observation& obs,
                              size_t r, const TensorMeta& got) {
  if (r >= contract.returns.size()) return "";
  const ReturnSpec& spec = contract.returns[r];
  std::string diff;
  if (!spec.shape.empty()) {
    std::vector<int64_t> want;
    for (const Expr& e : spec.shape) want.push_back(e.eval(facts.input()));
    if (want != got.sizes) diff = "sizes " + shape_text(got.sizes) + ", the contract says " + shape_text(want);
  }
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  if (spec.dtype_from >= 0) {
    for (const ArgObservation& a : obs.tensors)
      if (a.arg == spec.dtype_from) dtype = a.before.dtype;
  } else if (spec.dtypes.size() == 1) {
    dtype = spec.dtypes[0];
  }
  const bool listed = std::find(spec.dtypes.begin(), spec.dtypes.end(), got.dtype) != spec.dtypes.end();
  if ((dtype != c10::ScalarType::Undefined && dtype != got.dtype) || (spec.dtypes.size() > 1 && !listed))
    diff += std::string(diff.empty() ? "" : "; ") + "dtype " + c10::toString(got.dtype) +
            ", not the contract's";
  return diff;
}

std::optional<Finding> missing_fake(const std::string& error) {
  if (!missing_meta_kernel(error)) return std::nullopt;
  return Finding{Clause::Fake, "the op has no Meta (fake) kernel, and the contract lists the fake mode: "
                         "torch.compile cannot trace it. Register one (TORCH_LIBRARY_IMPL(ns, "
                         "Meta, m)) or skip the mode with a reason. (" +
                             error.substr(0, error.find('\n')) + ")"};
}

// The fake threw: a missing Meta kernel, or a fake that refuses what eager takes.
std::vector<Finding> fake_threw(const FakeInput& in) {
  if (auto missing = missing_fake(in.fake.error)) return {*missing};
  if (in.eager.threw) return {};  // both refuse the case: nothing to compare
  return {{Clause::Fake, "the fake (Meta kernel or Python fake) threw where eager did not: " + in.fake.error}};
}

// Arguments whose metadata eager and the fake change differently.
void add_argument_changes(const FakeInput& in, std::vector<Finding>& out) {
  for (const ArgObservation& e : in.eager.tensors)
    for (const ArgObservation& f : in.fake.tensors) {
      if (f.arg != e.arg) continue;
      const std::string ec = metadata_change(e.before, e.after, false),
                        fc = metadata_change(f.before, f.after, false);
      if (ec != fc)
        out.push_back({Clause::Fake, "argument '" + in.contract.args[e.arg].name + "': eager " +
                                   (ec.empty() ? "leaves its metadata as it was" : "changes it (" + ec + ")") +
                                   ", the fake " +
                                   (fc.empty() ? "leaves it as it was" : "changes it (" + fc + ")") +
                                   ": the compiled program plans with the fake's tensors."});
    }
}

// How the fake's return differs from eager's, "; "-separated; "" when it predicts it.
std::string return_diff(const FakeInput& in, const ReturnObservation& e, const ReturnObservation& f) {
  std::string diff;
  auto add = [&](const std::string& what) { diff += (diff.empty() ? "" : "; ") + what; };
  if (e.meta.sizes != f.meta.sizes) add("sizes: eager " + shape_text(e.meta.sizes) + ", meta " + shape_text(f.meta.sizes));
  if (e.meta.dtype != f.meta.dtype)
    add(std::string("dtype: eager ") + c10::toString(e.meta.dtype) + ", meta " + c10::toString(f.meta.dtype));
  if (e.meta.sizes == f.meta.sizes && !same_significant_strides(e.meta, f.meta))
    add("strides: eager " + shape_text(e.meta.strides) + ", meta " + shape_text(f.meta.strides));
  if (e.meta.storage_offset != f.meta.storage_offset)
    add("storage offset: eager " + std::to_string(e.meta.storage_offset) + ", meta " +
        std::to_string(f.meta.storage_offset));
  const std::vector<int> ea = aliased_args(e, in.eager), fa = aliased_args(f, in.fake);
  auto names = [&](const std::vector<int>& v) {
    std::string s;
    for (int i : v) s += (s.empty() ? "'" : ", '") + in.contract.args[i].name + "'";
    return s.empty() ? std::string("nothing") : s;
  };
  if (ea != fa) add("aliases: eager " + names(ea) + ", meta " + names(fa));
  return diff;
}

void add_return_findings(const FakeInput& in, size_t r, std::vector<Finding>& out) {
  const ReturnObservation& e = in.eager.returns[r];
  const ReturnObservation& f = in.fake.returns[r];
  const std::string ret = "return " + std::to_string(r);
  if (e.is_tensor != f.is_tensor || e.value.defined() != f.value.defined()) {
    out.push_back({Clause::Fake, ret + ": the fake and eager disagree on whether it is a tensor"});
    return;
  }
  if (!e.is_tensor || !e.value.defined()) return;
  if (const std::string off = contract_mismatch(in.contract, in.facts, in.eager, r, e.meta); !off.empty())
    out.push_back({Clause::Fake, ret + " breaks the contract's returns: (eager gives " + off +
                               "): a fake kernel written from the contract mispredicts it."});
  if (const std::string diff = return_diff(in, e, f); !diff.empty())
    out.push_back({Clause::Fake, ret + ": the fake (Meta kernel or Python fake) does not predict eager (" + diff +
                               "). torch.compile plans memory and later ops from the Meta "
                               "result, so the compiled program computes with the wrong layout."});
}

}  // namespace

std::vector<Finding> check_fake_alone(const FakeAloneInput& in) {
  if (in.fake.threw) {
    if (auto missing = missing_fake(in.fake.error)) return {*missing};
    return {{Clause::Fake, "the fake (Meta kernel or Python fake) threw on a case that meets the contract "
                     "(the real op cannot run here to compare): " + in.fake.error}};
  }
  std::vector<Finding> out;
  for (size_t r = 0; r < in.fake.returns.size(); ++r) {
    const ReturnObservation& f = in.fake.returns[r];
    if (!f.is_tensor || !f.value.defined()) continue;
    if (const std::string off = contract_mismatch(in.contract, in.facts, in.fake, r, f.meta); !off.empty())
      out.push_back({Clause::Fake, "return " + std::to_string(r) + ": the fake breaks the contract's returns: (it gives " +
                                 off + "): the compiled program plans with a wrong tensor."});
  }
  return out;
}

std::vector<Finding> check_fake(const FakeInput& in) {
  if (in.fake.threw) return fake_threw(in);
  if (in.eager.threw) return {};  // eager's own failure is reported by the crash clause
  if (in.fake.returns.size() != in.eager.returns.size())
    return {{Clause::Fake, "the fake returned " + std::to_string(in.fake.returns.size()) + " values, eager " +
                         std::to_string(in.eager.returns.size())}};
  std::vector<Finding> out;
  add_argument_changes(in, out);
  for (size_t r = 0; r < in.eager.returns.size(); ++r) add_return_findings(in, r, out);
  return out;
}

}  // namespace opc
