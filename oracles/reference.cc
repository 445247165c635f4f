// reference: eager results differ from the contract's reference op (plain ATen, the same
// schema, run on the same case) beyond the contract's tolerance for the dtype.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "generators/case.h"
#include "oracles/oracles.h"

namespace opc {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

std::string index_text(const at::Tensor& t, int64_t flat) {
  std::vector<int64_t> idx(t.dim());
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    idx[d] = flat % t.size(d);
    flat /= t.size(d);
  }
  return shape_text(idx);
}

// "" when `got` is within tolerance of `want` (NaN matches NaN); otherwise the worst element.
std::string beyond_tolerance(const at::Tensor& got, const at::Tensor& want, Tolerance tol) {
  if (got.sizes() != want.sizes())
    return "sizes " + shape_text(got.sizes().vec()) + " vs the reference's " + shape_text(want.sizes().vec());
  if (got.numel() == 0) return "";
  const at::Tensor a = got.to(at::kDouble).contiguous().flatten();
  const at::Tensor b = want.to(at::kDouble).contiguous().flatten();
  const at::Tensor nan_a = a.isnan(), nan_b = b.isnan();
  at::Tensor excess = (a - b).abs() - (tol.atol + tol.rtol * b.abs());
  excess = excess.masked_fill(a == b, 0).masked_fill(nan_a & nan_b, 0);  // equal infinities too
  excess = excess.masked_fill(nan_a != nan_b, std::numeric_limits<double>::infinity());
  const int64_t worst = excess.argmax().item<int64_t>();
  if (!(excess[worst].item<double>() > 0)) return "";
  const int64_t bad = (excess > 0).sum().item<int64_t>();
  return std::to_string(bad) + " of " + std::to_string(a.numel()) + " elements; worst at " +
         index_text(got, worst) + ": op " + number(a[worst].item<double>()) + ", reference " +
         number(b[worst].item<double>()) + " (atol " + number(tol.atol) + ", rtol " + number(tol.rtol) + " for " +
         dtype_name(got.scalar_type()) + ")";
}

}  // namespace

std::vector<Finding> check_reference(const ReferenceInput& in) {
  const Observation& op = in.eager;
  const Observation& ref = in.reference;
  if (op.threw) return {};  // the crash clause speaks for it
  const std::string who = "the reference " + in.contract.reference;
  if (ref.threw)
    return {{"reference", who + " threw on a case the op accepted: " + ref.error +
                              " (fix the reference or tighten the contract)"}};
  std::vector<Finding> out;
  for (size_t r = 0; r < op.returns.size() && r < ref.returns.size(); ++r) {
    if (!op.returns[r].is_tensor || !op.returns[r].value.defined()) continue;
    const std::string diff = beyond_tolerance(op.returns[r].value, ref.returns[r].value,
                                              in.contract.tolerance_for(op.returns[r].value.scalar_type()));
    if (!diff.empty())
      out.push_back({"reference", "return " + std::to_string(r) + " differs from " + who + ": " + diff});
  }
  for (size_t i = 0; i < op.tensors.size() && i < ref.tensors.size(); ++i) {
    const int arg = op.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    const at::Tensor& v = op.tensors[i].view;
    const std::string diff = beyond_tolerance(v, ref.tensors[i].view, in.contract.tolerance_for(v.scalar_type()));
    if (!diff.empty())
      out.push_back({"reference", "argument '" + in.contract.args[arg].name + "' differs from " +
                                      who + ": " + diff});
  }
  return out;
}

}  // namespace opc
