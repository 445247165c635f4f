#include "check/bind_ops.h"

#include <algorithm>

#include "runners/python/bridge.h"

namespace opc {

std::string unfit_reason(const c10::FunctionSchema& want, const c10::FunctionSchema& got) {
  auto types = [](const std::vector<c10::Argument>& v) {
    std::vector<std::string> t;
    for (const auto& a : v) t.push_back(a.type()->str());
    return t;
  };
  if (types(want.arguments()) != types(got.arguments()) || types(want.returns()) != types(got.returns()))
    return "the registered schema's argument or return types differ from the contract's, so "
           "no case fits it (see the schema finding)";
  return "";
}

namespace {

// The reference's op: a Python function is first registered as one with the contract's schema.
std::string reference_op(const Contract& contract) {
  if (!contract.reference_is_python()) return contract.reference;
  try {
    python::start();
    return python::define_python_reference(contract.reference, contract.schema_text);
  } catch (const std::exception& e) {
    throw ContractError(contract.reference_loc, "reference " + contract.reference + ": " + e.what());
  }
}

}  // namespace

BoundOps bind_ops(const Contract& contract, const std::string& target) {
  const SourceLoc& where = target == contract.port ? contract.port_loc : contract.op_loc;
  BoundOps b{bind_op(target, target == contract.op ? contract.overload : "", where), {}, {}};
  if (!contract.reference.empty()) {
    b.reference = bind_op(reference_op(contract), "", contract.reference_loc);
    if (auto why = unfit_reason(*contract.schema, b.reference->handle.schema()); !why.empty())
      throw ContractError(contract.reference_loc, "the reference " + contract.reference +
                                                      " does not take the contract's schema: " +
                                                      b.reference->handle.schema().name() + " is '" +
                                                      toString(b.reference->handle.schema()) + "'");
  }
  if (contract.donates && !contract.skip.count(Mode::Compiled)) {
    b.donating = bind_op(target, contract.donates->overload, contract.donates->loc);
    if (auto why = unfit_reason(*contract.schema, b.donating->handle.schema()); !why.empty())
      throw ContractError(contract.donates->loc,
                          "the donating overload " + b.donating->name + " does not take the "
                          "contract's argument and return types: it is '" +
                          toString(b.donating->handle.schema()) + "'");
  }
  return b;
}

CaseOps case_ops(const BoundOps& bound, const Contract& contract, const CheckOptions& options) {
  CaseOps ops = bound.ops();
  auto wanted = [&](Mode m) {
    return !contract.skip.count(m) &&
           (options.modes.empty() || std::find(options.modes.begin(), options.modes.end(), m) != options.modes.end());
  };
  if (options.python && (wanted(Mode::Fake) || wanted(Mode::Compiled))) {
    try {
      python::start();  // before the worker forks, so that the worker has it too
      if (wanted(Mode::Compiled)) python::warm_up_compile();
      ops.real_pytorch = true;
    } catch (const std::exception& e) {
      ops.without_pytorch = e.what();
    }
  }
  return ops;
}

}  // namespace opc
