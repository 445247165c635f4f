// In-place use (`aliasing.inplace`): callers hand one tensor for two arguments. A
// supported use must give what separate tensors give, bitwise; an unsupported one must
// be refused with an error, never computed silently.
#include <string>
#include <vector>

#include "oracles/compare.h"
#include "oracles/oracles.h"

namespace opc {
namespace {

const ArgObservation* arg_of(const Observation& obs, int arg) {
  for (const ArgObservation& a : obs.tensors)
    if (a.arg == arg) return &a;
  return nullptr;
}

}  // namespace

std::vector<Finding> check_inplace(const InplaceInput& in) {
  const Contract& c = in.contract;
  const std::string how = c.args[in.spec.into].name + "' given the tensor of '" + c.args[in.spec.from].name + "'";
  if (!in.spec.supported) {
    if (in.in_place.threw) return {};
    return {{Clause::Precondition,
             "the op accepted '" + how + " (the same tensor for both) without raising, an "
             "aliasing its contract calls unsupported (aliasing.inplace, supported: false): a "
             "caller who passes it gets whatever the overlapping reads and writes leave, with no "
             "error to say so"}};
  }
  if (in.separate.threw) return {};
  if (in.in_place.threw)
    return {{Clause::Alias, "called in place ('" + how + "), which its contract supports "
                      "(aliasing.inplace), the op threw: " + in.in_place.error}};
  std::vector<Finding> out;
  auto compare = [&](const std::string& what, const at::Tensor& in_place, const at::Tensor& separate) {
    if (const std::string d = bytes_differ(in_place, separate); !d.empty())
      out.push_back({Clause::Alias, "called in place ('" + how + "), which its contract supports "
                              "(aliasing.inplace), the op leaves other values in " + what +
                              " than on separate tensors: " + d + ". Callers that reuse the "
                              "input's buffer (vLLM's in-place calls) get wrong results silently."});
  };
  const ArgObservation* shared = arg_of(in.in_place, in.spec.from);
  const ArgObservation* written = arg_of(in.separate, in.spec.into);
  if (shared && written) compare("'" + c.args[in.spec.into].name + "'", shared->view, written->view);
  for (const ArgObservation& a : in.separate.tensors) {
    if (a.arg == in.spec.into || a.arg == in.spec.from || !in.registered.mutable_arg[a.arg]) continue;
    if (const ArgObservation* b = arg_of(in.in_place, a.arg))
      compare("'" + c.args[a.arg].name + "'", b->view, a.view);
  }
  for (size_t r = 0; r < in.separate.returns.size() && r < in.in_place.returns.size(); ++r)
    if (in.separate.returns[r].is_tensor && in.in_place.returns[r].is_tensor)
      compare("return " + std::to_string(r), in.in_place.returns[r].value, in.separate.returns[r].value);
  return out;
}

}  // namespace opc
