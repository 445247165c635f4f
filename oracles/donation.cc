// donation: vLLM IR's contract between a functional op and its donating overload.
//
// The functional overload (the contract's op) must not write the inputs listed under
// `donates:` -- in-place providers are cloned first (safe_impl_fn). The donating overload
// (`maybe_inplace`), which vLLM's reinplacing pass swaps in once the donated inputs are
// dead, may write them, must mark them mutable, must leave every other input alone, and
// must return exactly what the functional one returns.
#include "generators/case.h"
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"
#include "runners/compiled_runner.h"

namespace opc {
namespace {

std::string names(const Contract& c, const std::vector<int>& args) {
  std::string s;
  for (int a : args) s += (s.empty() ? "'" : ", '") + c.args[a].name + "'";
  return s;
}

// "" when a and b hold the same elements bitwise; otherwise where they first differ.
std::string bitwise_difference(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type())
    return "sizes/dtype " + shape_text(a.sizes().vec()) + " " + dtype_name(a.scalar_type()) +
           " vs " + shape_text(b.sizes().vec()) + " " + dtype_name(b.scalar_type());
  const std::vector<uint8_t> x = dense_bytes(a), y = dense_bytes(b);
  if (x == y) return "";
  const size_t item = a.element_size();
  size_t byte = 0;
  while (x[byte] == y[byte]) ++byte;
  const size_t elem = byte / item;
  std::vector<int64_t> idx(a.dim());
  for (int64_t d = a.dim() - 1, rest = static_cast<int64_t>(elem); d >= 0; --d) {
    idx[d] = rest % a.size(d);
    rest /= a.size(d);
  }
  return "first at " + shape_text(idx) + ": " + element_hex(x.data() + elem * item, item) +
         " vs " + element_hex(y.data() + elem * item, item);
}

}  // namespace

std::optional<Finding> check_donating_schema(const Contract& contract, const Annotations& donating) {
  std::vector<int> unmarked;
  for (int a : contract.donates->args)
    if (!donating.mutable_arg[a]) unmarked.push_back(a);
  if (unmarked.empty()) return std::nullopt;
  return Finding{Clause::Donation, "the donating overload '" + contract.donates->overload +
                                 "' does not mark donated " + names(contract, unmarked) +
                                 " mutable (Tensor(a!)): functionalization would let the caller "
                                 "read them after the op has overwritten them"};
}

std::vector<Finding> check_functional_overload(const OracleInput& in) {
  std::vector<Finding> out;
  if (in.obs.threw) return out;
  for (const ArgObservation& a : in.obs.tensors) {
    if (!in.contract.donates->donated(a.arg)) continue;
    const std::vector<int64_t> changed = changed_elements(a);
    const std::vector<uint8_t> mask = footprint(a.view, a.storage);
    for (int64_t e : changed) {
      if (!mask[e]) continue;  // outside the view: extent's
      out.push_back({Clause::Donation, "the functional overload wrote its input '" +
                                     in.contract.args[a.arg].name + "' (at " +
                                     view_index(a.view, a.storage, e) + ": " + change_text(a, e) +
                                     "), which only the donating overload '" +
                                     in.contract.donates->overload +
                                     "' may write: an in-place provider must be cloned first "
                                     "(vLLM IR's safe_impl_fn), or callers that use the input "
                                     "again read the op's result"});
      break;
    }
  }
  return out;
}

std::vector<Finding> check_donating_overload(const DonationInput& in) {
  const Observation& f = in.functional;
  const Observation& d = in.donated;
  const std::string who = "the donating overload '" + in.contract.donates->overload + "'";
  if (f.threw) return {};  // the functional op's own findings speak for it
  if (d.threw)
    return {{Clause::Donation, who + " threw on a case the functional op accepts: " + d.error}};
  std::vector<Finding> out;
  if (f.returns.size() != d.returns.size())
    out.push_back({Clause::Donation, who + " returns " + std::to_string(d.returns.size()) +
                                   " values, the functional op " + std::to_string(f.returns.size())});
  for (size_t r = 0; r < f.returns.size() && r < d.returns.size(); ++r) {
    if (!f.returns[r].is_tensor || !f.returns[r].value.defined()) continue;
    const std::string diff = bitwise_difference(d.returns[r].value, f.returns[r].value);
    if (!diff.empty())
      out.push_back({Clause::Donation, who + "'s return " + std::to_string(r) +
                                     " differs from the functional op's (" + diff +
                                     "): vLLM's reinplacing pass swaps one for the other, so a "
                                     "compiled graph computes something else than eager"});
  }
  for (const ArgObservation& a : d.tensors) {
    if (in.contract.donates->donated(a.arg) || in.donating.mutable_arg[a.arg]) continue;
    const std::vector<int64_t> changed = changed_elements(a);
    const std::vector<uint8_t> mask = footprint(a.view, a.storage);
    for (int64_t e : changed) {
      if (!mask[e]) continue;
      out.push_back({Clause::Donation, who + " wrote '" + in.contract.args[a.arg].name + "' (at " +
                                     view_index(a.view, a.storage, e) + ": " + change_text(a, e) +
                                     "), which is not donated: the caller still owns it"});
      break;
    }
  }
  return out;
}

}  // namespace opc
