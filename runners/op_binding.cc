#include "runners/op_binding.h"

#include "support/names.h"

namespace opc {
namespace {

bool is_registered(const std::string& name, const std::string& overload) {
  return c10::Dispatcher::singleton().findSchema({name, overload}).has_value();
}

}  // namespace

std::vector<std::string> registered_op_names() {
  std::vector<std::string> names;
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames())
    names.push_back(n.overload_name.empty() ? n.name : n.name + "." + n.overload_name);
  return names;
}

std::string target_name(const Contract& contract, const std::string& cli_target) {
  if (!cli_target.empty()) return cli_target;
  if (contract.port.empty() || is_registered(contract.op, contract.overload)) return contract.op;
  return contract.port;
}

OpBinding bind_op(const std::string& qualname, const std::string& overload,
                  const SourceLoc& where) {
  auto handle = c10::Dispatcher::singleton().findSchema({qualname, overload});
  const std::string full = overload.empty() ? qualname : qualname + "." + overload;
  if (!handle) {
    std::string msg = "op '" + full + "' is not registered in this process";
    auto near = closest_names(full, registered_op_names(), 5);
    if (!near.empty()) msg += " (closest registered: " + join(near) + ")";
    msg += "; load the library that defines it with --load LIB.so";
    throw ContractError(where, msg);
  }
  return {full, *handle, annotations_of(handle->schema())};
}

}  // namespace opc
