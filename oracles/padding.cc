// padding: results on the real rows must not depend on what the padding rows hold.
#include "oracles/oracles.h"
#include "runners/compiled_runner.h"
#include "runners/materialize.h"

namespace opc {

std::vector<Finding> check_padding(const PaddingInput& in) {
  const Observation& a = in.nan_padded;
  const Observation& b = in.finite_padded;
  if (a.threw || b.threw) {
    if (a.threw != b.threw)
      return {{Clause::Padding, "the op throws or not depending on the padding rows' garbage: " +
                              (a.threw ? a.error : b.error)}};
    return {};
  }
  const PaddingSpec& p = *in.contract.padding;
  const int64_t real = p.real.eval(in.facts.input());
  // A return with as many rows as a padded argument has padding rows of its own.
  int64_t padded_size = -1;
  for (const ArgObservation& t : a.tensors)
    if (std::find(p.args.begin(), p.args.end(), t.arg) != p.args.end() && p.dim < t.view.dim())
      padded_size = t.view.size(p.dim);
  const std::string rows = "rows [0, " + std::to_string(real) + ") of dim " + std::to_string(p.dim);
  const char* why = " depend on the padding rows' contents (NaN in one run, finite garbage in "
                    "the other). Under CUDA graphs padded rows hold whatever the last batch left: "
                    "a per-tensor reduction (amax, top-k) over them leaks it into real results.";
  std::vector<Finding> out;
  for (size_t r = 0; r < a.returns.size() && r < b.returns.size(); ++r) {
    if (!a.returns[r].is_tensor || !a.returns[r].value.defined()) continue;
    const at::Tensor& ra = a.returns[r].value;
    const bool padded = p.dim < ra.dim() && ra.size(p.dim) == padded_size;
    const int64_t keep = padded ? real : (p.dim < ra.dim() ? ra.size(p.dim) : 0);
    if (dense_bytes(real_rows(ra, p.dim, keep)) != dense_bytes(real_rows(b.returns[r].value, p.dim, keep)))
      out.push_back({Clause::Padding, "return " + std::to_string(r) + ": its values" +
                                    (padded ? " on " + rows : "") + why});
  }
  for (size_t i = 0; i < a.tensors.size() && i < b.tensors.size(); ++i) {
    const int arg = a.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    const bool padded = std::find(p.args.begin(), p.args.end(), arg) != p.args.end();
    const at::Tensor& va = a.tensors[i].view;
    const int64_t keep = padded ? real : (p.dim < va.dim() ? va.size(p.dim) : 0);
    if (dense_bytes(real_rows(va, p.dim, keep)) != dense_bytes(real_rows(b.tensors[i].view, p.dim, keep)))
      out.push_back({Clause::Padding, "argument '" + in.contract.args[arg].name + "': its values" +
                                    (padded ? " on " + rows : "") + why});
  }
  return out;
}

}  // namespace opc
