// schema: the registered schema must be the contract's, alias annotations included.
#include <sstream>

#include "runners/oracles/oracles.h"

namespace opc {
namespace {

template <class T>
std::string text(const T& x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

// The schema without its name: the contract's schema names the upstream op, the
// registered one our port (another namespace, maybe another name).
std::string signature(const c10::FunctionSchema& s) {
  const std::string t = text(s);
  return t.substr(t.find('('));
}

std::string compare_args(const std::vector<c10::Argument>& want,
                         const std::vector<c10::Argument>& got, const char* what) {
  if (want.size() != got.size())
    return std::string("the contract has ") + std::to_string(want.size()) + " " + what +
           ", the registered op " + std::to_string(got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    // Argument's printer covers type, alias annotation, name and default.
    const std::string w = text(want[i]), g = text(got[i]);
    if (w != g || want[i].kwarg_only() != got[i].kwarg_only())
      return std::string(what).substr(0, std::string(what).size() - 1) + " " + std::to_string(i) +
             ": contract '" + w + "', registered '" + g + "'";
  }
  return "";
}

}  // namespace

std::optional<Finding> check_schema(const Contract& contract, const c10::FunctionSchema& registered) {
  const c10::FunctionSchema& want = *contract.schema;
  std::string diff = compare_args(want.arguments(), registered.arguments(), "arguments");
  if (diff.empty()) diff = compare_args(want.returns(), registered.returns(), "returns");
  if (diff.empty() && want.is_vararg() != registered.is_vararg()) diff = "varargs differ";
  if (diff.empty()) return std::nullopt;
  return Finding{"schema", "the registered schema differs from the contract's: " + diff +
                               ".\n    contract:   " + signature(want) +
                               "\n    registered: " + signature(registered) +
                               "\n  PyTorch trusts the registered one: its alias and mutability "
                               "annotations decide what the compiler may assume."};
}

}  // namespace opc
