// schema: the registered schema must be the contract's, alias annotations included.
#include <sstream>

#include "oracles/oracles.h"
#include "support/names.h"

namespace opc {
namespace {

// Alias sets named by first appearance (a, b, ...), so `Tensor!` (an anonymous set) and
// `Tensor(a!)` compare equal, and messages read as the user wrote them.
class Canonical {
 public:
  std::string arg(const c10::Argument& a) {
    std::ostringstream s;
    s << a.type()->str();
    if (const c10::AliasInfo* info = a.alias_info()) {
      s << "(";
      bool first = true;
      for (const auto& set : info->beforeSets()) {
        s << (first ? "" : "|") << letter(set.toUnqualString());
        first = false;
      }
      s << (info->isWrite() ? "!" : "") << ")";
    }
    if (!a.name().empty()) s << " " << a.name();
    if (a.default_value()) s << "=" << *a.default_value();
    return s.str();
  }

 private:
  std::string letter(const std::string& set) {
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] == set) return std::string(1, static_cast<char>('a' + i % 26));
    seen_.push_back(set);
    return std::string(1, static_cast<char>('a' + (seen_.size() - 1) % 26));
  }
  std::vector<std::string> seen_;
};

struct Signature {
  std::vector<std::string> args, rets;
  std::string text;
};

Signature signature(const c10::FunctionSchema& s) {
  Canonical names;
  Signature sig;
  std::vector<std::string> shown;
  for (const auto& a : s.arguments()) {
    const std::string t = names.arg(a);
    const bool first_kwarg = a.kwarg_only() && (sig.args.empty() || sig.args.back()[0] != '*');
    if (first_kwarg) shown.push_back("*");
    shown.push_back(t);
    sig.args.push_back(a.kwarg_only() ? "*" + t : t);  // kwarg-only-ness is compared too
  }
  for (const auto& r : s.returns()) sig.rets.push_back(names.arg(r));
  sig.text = "(" + join(shown) + ") -> " +
             (sig.rets.size() == 1 ? sig.rets[0] : "(" + join(sig.rets) + ")");
  return sig;
}

std::string compare(const std::vector<std::string>& want, const std::vector<std::string>& got,
                    const char* what) {
  if (want.size() != got.size())
    return "the contract has " + std::to_string(want.size()) + " " + what + "s, the registered op " +
           std::to_string(got.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i])
      return std::string(what) + " " + std::to_string(i) + ": contract '" + want[i] +
             "', registered '" + got[i] + "'";
  return "";
}

}  // namespace

std::optional<Finding> check_schema(const Contract& contract, const c10::FunctionSchema& registered) {
  const Signature want = signature(*contract.schema), got = signature(registered);
  std::string diff = compare(want.args, got.args, "argument");
  if (diff.empty()) diff = compare(want.rets, got.rets, "return");
  if (diff.empty() && contract.schema->is_vararg() != registered.is_vararg()) diff = "varargs differ";
  if (diff.empty()) return std::nullopt;
  return Finding{Clause::Schema, "the registered schema differs from the contract's: " + diff +
                               ".\n  contract:   " + want.text + "\n  registered: " + got.text +
                               "\n  PyTorch trusts the registered one: its alias and mutability "
                               "annotations decide what the compiler may assume."};
}

}  // namespace opc
