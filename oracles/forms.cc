// forms: an op that accepts an argument in more than one shape (vLLM's rotary embedding
// takes query as [tokens, heads * head_size] or [tokens, heads, head_size]) must compute
// the same thing from the same data in each; a kernel that reads one form's sizes as the
// other's (a head size taken from the last dim) computes something else, silently.
#include "oracles/compare.h"
#include "oracles/oracles.h"

namespace opc {

std::vector<Finding> check_forms(const FormsInput& in) {
  const Observation& a = in.shaped;
  const Observation& b = in.formed;
  if (a.threw) return {};  // the shaped call is judged on its own
  const std::string with = "with " + in.form + ", ";
  if (b.threw)
    return {{Clause::Forms, with + "a form its contract lists (forms:), the op threw: " + b.error}};
  const std::string why = ". A caller passing the other form gets other results, silently.";
  std::vector<Finding> out;
  for (size_t r = 0; r < a.returns.size() && r < b.returns.size(); ++r) {
    if (!a.returns[r].is_tensor || !b.returns[r].is_tensor) continue;
    if (const std::string d = bytes_differ(b.returns[r].value, a.returns[r].value); !d.empty())
      out.push_back({Clause::Forms, with + "return " + std::to_string(r) + " differs from the call in its shape: " + d + why});
  }
  for (size_t i = 0; i < a.tensors.size() && i < b.tensors.size(); ++i) {
    const int arg = a.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    if (const std::string d = bytes_differ(b.tensors[i].view, a.tensors[i].view); !d.empty())
      out.push_back({Clause::Forms, with + "argument '" + in.contract.args[arg].name +
                                  "' differs from the call in its shape: " + d + why});
  }
  return out;
}

}  // namespace opc
