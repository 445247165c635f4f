// Finds the op a contract governs in the dispatcher, and which op a run checks.
//
//   OpBinding op = bind_op(target_name(contract, cli_target), contract);
//   op.handle.callBoxed(stack);
//
// An op that is not registered is a ContractError at the contract's `op:` (or `port:`)
// naming the closest registered ops, so a typo or a missing --load is obvious.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

#include "spec/annotations.h"
#include "spec/contract.h"

namespace opc {

struct OpBinding {
  std::string name;  // qualified, with ".overload" when there is one
  c10::OperatorHandle handle;
  Annotations annotations;  // of the registered schema
};

// The op to check: --target when given, else the contract's `op` when registered,
// else its `port`.
std::string target_name(const Contract& contract, const std::string& cli_target);

// Throws ContractError (at `where`) when `qualname` is not registered.
OpBinding bind_op(const std::string& qualname, const std::string& overload, const SourceLoc& where);

// All registered operator names ("ns::name" or "ns::name.overload").
std::vector<std::string> registered_op_names();

}  // namespace opc
