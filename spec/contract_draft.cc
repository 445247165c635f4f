#include "spec/contract_draft.h"

#include <regex>
#include <sstream>

#include "spec/annotations.h"

namespace opc {
namespace {

// The schema as a contract states it: the op's name without its namespace, and `Tensor!`
// where PyTorch prints an anonymous write alias as "Tensor($0! -> )", which its own
// parser does not read back.
std::string schema_text(const c10::FunctionSchema& schema) {
  std::ostringstream s;
  s << schema;
  std::string text = std::regex_replace(s.str(), std::regex(R"(\(\$\d+!( -> [^)]*)?\))"), "!");
  const size_t paren = text.find('('), ns = text.rfind("::", paren);
  if (ns != std::string::npos) text.erase(0, ns + 2);
  return text;
}

// A value of the scalar's type for `args:`, or "" when contracts cannot state one yet.
std::string scalar_guess(const c10::Argument& a) {
  switch (a.type()->kind()) {
    case c10::TypeKind::BoolType: return "{choose: [false, true]}";
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: return "{choose: [1, 2]}";
    case c10::TypeKind::FloatType: return "{choose: [1.0e-6, 0.5]}";
    case c10::TypeKind::StringType: return "\"TODO\"";
    default: return "";
  }
}

bool is_tensor(const c10::Argument& a, bool* optional) {
  const c10::TypePtr& t = a.type();
  *optional = false;
  if (t->kind() == c10::TypeKind::TensorType) return true;
  if (auto opt = t->cast<c10::OptionalType>())
    if (opt->getElementType()->kind() == c10::TypeKind::TensorType) return *optional = true;
  return false;
}

}  // namespace

std::string draft_schema_line(const c10::FunctionSchema& schema) {
  std::string y;
  if (!schema.overload_name().empty()) y += "overload: " + schema.overload_name() + "\n";
  return y + "schema: \"" + std::regex_replace(schema_text(schema), std::regex("[\"\\\\]"), "\\$&") + "\"\n";
}

std::string draft_tail(const c10::FunctionSchema& schema) {
  const Annotations ann = annotations_of(schema);
  const auto& args = schema.arguments();
  std::ostringstream y;
  if (!schema.returns().empty()) {
    y << "aliasing:\n  returns: [";
    for (size_t r = 0; r < ann.return_alias.size(); ++r)
      y << (r ? ", " : "") << (ann.return_alias[r] < 0 ? "none" : args[ann.return_alias[r]].name());
    y << "]\n";
  }
  bool any_mutable = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ann.mutable_arg[i]) continue;
    if (!any_mutable) y << "mutates:\n";
    any_mutable = true;
    y << "  " << args[i].name() << ": {writes: all}  # TODO: the region it writes, sentinel: true "
         "if every element of it must be written\n";
  }
  y << "modes: [fake, eager, compiled, cudagraph]\n";
  return y.str();
}

std::string draft_contract(const std::string& qualname, const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  std::ostringstream y;
  y << "# Draft contract for " << qualname << ", written by `opcontract draft` from its\n"
       "# registered schema. It loads and runs as it is, but every TODO is a guess: state\n"
       "# each tensor's real shape, dtypes and layouts, the requires the op checks, the\n"
       "# branches of its kernels, and which region each mutable argument writes\n"
       "# (docs/format.md).\n";
  y << "op: " << qualname << "\n" << draft_schema_line(schema);
  y << "dims:\n"
       "  # TODO: the op's own sizes (num_tokens, hidden, ...), with favor: for its branches.\n"
       "  rows: {range: [0, 16]}\n"
       "  cols: {range: [1, 16]}\n";
  y << "args:\n";
  std::string unsupported;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Argument& a = args[i];
    bool optional = false;
    if (is_tensor(a, &optional)) {
      y << "  " << a.name() << ": {dtype: [float32], shape: [rows, cols], layouts: [contiguous, "
           "narrow, transposed, row_strided]"
        << (optional ? ", optional: true" : "") << "}  # TODO: shape, dtypes\n";
    } else if (a.default_value()) {
      y << "  # " << a.name() << ": left out, the schema's default is passed\n";
    } else if (const std::string v = scalar_guess(a); !v.empty()) {
      y << "  " << a.name() << ": " << v << "  # TODO: the values callers pass\n";
    } else {
      y << "  " << a.name() << ": TODO  # " << a.type()->str()
        << " arguments cannot be generated yet\n";
      unsupported += " " + a.name();
    }
  }
  y << draft_tail(schema);
  if (!unsupported.empty())
    y << "# Not loadable yet: no generator for" << unsupported << ".\n";
  return y.str();
}

}  // namespace opc
