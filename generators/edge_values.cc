#include "generators/edge_values.h"

#include "generators/dim_gen.h"

namespace opc {
namespace {

constexpr ValueForm kAllForms[] = {ValueForm::Drawn,     ValueForm::ZeroRows,  ValueForm::ConstantRows,
                                   ValueForm::Huge,      ValueForm::TiedMax,   ValueForm::Denormals,
                                   ValueForm::NonFinite, ValueForm::Low,       ValueForm::High,
                                   ValueForm::Repeated};

bool is_float(c10::ScalarType t) {
  return t == c10::ScalarType::Float || t == c10::ScalarType::Double || t == c10::ScalarType::Half ||
         t == c10::ScalarType::BFloat16;
}

}  // namespace

std::vector<ValueForm> edge_forms(const ArgSpec& a, c10::ScalarType dtype) {
  using K = ValueDist::Kind;
  if (is_float(dtype) && (a.values.kind == K::Normal || a.values.kind == K::Uniform)) {
    std::vector<ValueForm> forms{ValueForm::ZeroRows, ValueForm::ConstantRows, ValueForm::Huge, ValueForm::TiedMax,
                                 ValueForm::Denormals};
    if (!a.values.finite) forms.push_back(ValueForm::NonFinite);
    return forms;
  }
  if (a.values.kind == K::Ints && c10::isIntegralType(dtype, /*includeBool=*/false))
    return {ValueForm::Low, ValueForm::High, ValueForm::Repeated};
  return {};
}

rc::Gen<ValueForm> edge_form_gen(std::vector<ValueForm> forms) {
  // Drawn twice per form, so that a form comes one time in three whatever RapidCheck's size
  // (as a listed layout does), and shrinking goes first to drawn values.
  std::vector<ValueForm> choices(2 * forms.size() + (forms.empty() ? 1 : 0), ValueForm::Drawn);
  choices.insert(choices.end(), forms.begin(), forms.end());
  return choice_gen(std::move(choices));
}

const char* to_string(ValueForm form) {
  switch (form) {
    case ValueForm::Drawn: return "drawn";
    case ValueForm::ZeroRows: return "zero_rows";
    case ValueForm::ConstantRows: return "constant_rows";
    case ValueForm::Huge: return "huge";
    case ValueForm::TiedMax: return "tied_max";
    case ValueForm::Denormals: return "denormals";
    case ValueForm::NonFinite: return "non_finite";
    case ValueForm::Low: return "low";
    case ValueForm::High: return "high";
    case ValueForm::Repeated: return "repeated";
  }
  return "drawn";
}

std::optional<ValueForm> parse_value_form(const std::string& name) {
  for (ValueForm f : kAllForms)
    if (name == to_string(f)) return f;
  return std::nullopt;
}

}  // namespace opc
