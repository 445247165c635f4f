// The first stage of a check: the op under test and its contract's companions bound in
// the dispatcher and fitted to the contract, and the real PyTorch started when the fake
// or compiled mode will use it.
//
//   const BoundOps bound = bind_ops(contract, target);   // ContractError when unregistered
//   const CaseOps ops = case_ops(bound, contract, options);
//   if (std::string why = unfit_reason(*contract.schema, bound.op.handle.schema()); ...)
#pragma once

#include <ATen/core/function_schema.h>

#include <functional>
#include <optional>
#include <string>

#include "check/options.h"
#include "spec/contract.h"
#include "runners/op_binding.h"

namespace opc {

// The ops a checked case calls: the op under test and the companions its contract names.
struct CaseOps {
  const OpBinding& op;
  const OpBinding* reference = nullptr;  // `reference:`, compared with eager
  const OpBinding* donating = nullptr;   // `donates:`' overload, run in the compiled mode
  std::function<void(Mode)> on_mode;     // told each mode before it runs (a crash's mode)
  // Told when work that is not the op's starts (true) and ends (false): a torch.compile call
  // (the first takes seconds) or a python_state hook building vLLM's state. Its time does
  // not count against the case's time limit, which is for the op.
  std::function<void(bool)> off_the_clock;
  // The embedded Python runs: the fake mode is PyTorch's FakeTensorMode, the compiled mode
  // adds real torch.compile to opcontract's C++ model (runners/python/bridge.h).
  bool real_pytorch = false;
  // Why not, when real_pytorch is false ("--no-python", or why Python could not start).
  std::string without_pytorch = "--no-python";
};

// The op under test and its contract's companions, bound in the dispatcher.
struct BoundOps {
  OpBinding op;
  std::optional<OpBinding> reference, donating;
  CaseOps ops() const { return {op, reference ? &*reference : nullptr, donating ? &*donating : nullptr}; }
};

// Throws ContractError when one is not registered or does not take the contract's types.
BoundOps bind_ops(const Contract& contract, const std::string& target);

// Cases are built from the contract's schema: they fit the registered op only when the
// argument and return types agree (annotations may differ; the schema clause says so).
// "" when they fit, else why not.
std::string unfit_reason(const c10::FunctionSchema& want, const c10::FunctionSchema& got);

// The ops of a check's cases, with the real PyTorch (embedded Python, started here, before
// any worker forks) when the fake or compiled mode runs and `options.python` allows it.
CaseOps case_ops(const BoundOps& bound, const Contract& contract, const CheckOptions& options);

}  // namespace opc
