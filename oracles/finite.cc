// finite: with `finite: true`, an op handed finite inputs gives finite outputs: no NaN or
// infinity in a return, or among the elements it wrote of a mutable argument (a per-row
// scale divided by a zero maximum, a softmax without its max subtracted, an fp16 sum of
// squares that overflows). Judged only on cases whose inputs are all finite.
#include <cmath>

#include "generators/case.h"
#include "oracles/oracles.h"
#include "oracles/storage_diff.h"

namespace opc {
namespace {

// The first element of `t` that is not finite, as "[i, j] = nan"; "" when there is none.
std::string first_non_finite(const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return "";
  const at::Tensor bad = t.isfinite().logical_not().flatten();
  if (!bad.any().item<bool>()) return "";
  const int64_t flat = bad.nonzero()[0][0].item<int64_t>();
  std::vector<int64_t> idx(t.dim());
  for (int64_t d = t.dim() - 1, rest = flat; d >= 0; --d) {
    idx[d] = rest % t.size(d);
    rest /= t.size(d);
  }
  const int64_t count = bad.sum().item<int64_t>();
  return std::to_string(count) + " element(s), first at " + shape_text(idx) + " = " +
         std::to_string(t.flatten()[flat].item<double>());
}

// The written elements of a mutable argument that are not finite (its unwritten ones keep
// the sentinel, a NaN: that is the write clause's).
std::string written_non_finite(const ArgObservation& a) {
  const std::vector<int64_t> changed = changed_elements(a);
  if (changed.empty() || !at::isFloatingType(a.storage.scalar_type())) return "";
  const at::Tensor values = a.storage.to(at::kDouble);
  const double* v = values.data_ptr<double>();
  for (int64_t e : changed)
    if (!std::isfinite(v[e])) return "the element stored at " + std::to_string(e) + " = " + std::to_string(v[e]);
  return "";
}

}  // namespace

std::vector<Finding> check_finite(const OracleInput& in) {
  if (!in.contract.finite || in.obs.threw) return {};
  const std::string why = " though every input was finite (the contract promises finite outputs: `finite: true`)";
  for (size_t r = 0; r < in.obs.returns.size(); ++r) {
    const ReturnObservation& ret = in.obs.returns[r];
    if (!ret.is_tensor || !ret.value.defined()) continue;
    if (const std::string bad = first_non_finite(ret.value); !bad.empty())
      return {{Clause::Finite, "return " + std::to_string(r) + " holds NaN or infinity: " + bad + why}};
  }
  for (const ArgObservation& a : in.obs.tensors) {
    if (!in.registered.mutable_arg[a.arg]) continue;
    if (const std::string bad = written_non_finite(a); !bad.empty())
      return {{Clause::Finite, "argument '" + in.contract.args[a.arg].name + "' was written NaN or infinity: " + bad + why}};
  }
  return {};
}

}  // namespace opc
