// precondition: an input that breaks a `requires:` must be refused; an op that accepts
// one silently computes on inputs its kernel was not written for.
#include "oracles/oracles.h"

namespace opc {

std::vector<Finding> check_precondition(const PreconditionInput& in) {
  if (in.obs.threw) return {};
  std::string broken;
  for (int i : in.broken)
    broken += (broken.empty() ? "'" : ", '") + in.contract.requires_[i].expr.text() + "'";
  return {{Clause::Precondition,
           "the op accepted a case that breaks requires " + broken +
               " without raising. A kernel that relies on a precondition it does not check reads "
               "or writes the wrong elements silently; enforce it with TORCH_CHECK, or move it to "
               "constraints: if callers guarantee it"}};
}

}  // namespace opc
