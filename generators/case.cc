#include "generators/case.h"

#include <sstream>

#include "generators/edge_values.h"
#include "generators/misuse.h"
#include "support/json_writer.h"

namespace opc {

std::string scalar_text(const ScalarValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "default";
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return "\"" + x + "\"";
        else {
          std::ostringstream s;
          s << x;
          return s.str();
        }
      },
      v);
}

namespace {

// {"kind": "size", "arg": "out", "dim": 0, "change": "minus_one"}: names, not numbers.
void write_misuse(JsonWriter& w, const Misuse& m, const Contract& contract) {
  w.key("misuse").begin_object();
  w.key("kind").value(to_string(m.kind));
  w.key("arg").value(contract.args[m.arg].name);
  switch (m.kind) {
    case MisuseKind::Size:
      w.key("dim").value(m.dim);
      w.key("change").value(size_change_name(static_cast<SizeChange>(m.value)));
      break;
    case MisuseKind::Rank:
      w.key("change").value(m.value);
      break;
    case MisuseKind::Dtype:
      w.key("dtype").value(dtype_name(static_cast<c10::ScalarType>(m.value)));
      break;
    case MisuseKind::Layout:
      w.key("layout").value(to_string(static_cast<Layout>(m.value)));
      break;
    case MisuseKind::Index:
    case MisuseKind::Scalar:
      w.key("value").value(m.value);
      break;  // a str scalar's: 0, unused
    case MisuseKind::None:
      break;
  }
  w.end_object();
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string describe(const Case& c, const Contract& contract) {
  std::string s;
  for (const auto& v : contract.values) s += (s.empty() ? "" : " ") + v.name + "=" + std::to_string(c.values[v.slot]);
  s += s.empty() ? "" : " |";
  for (size_t i = 0; i < contract.args.size(); ++i) {
    s += (i ? ", " : " ") + contract.args[i].name + ": ";
    if (const auto* t = std::get_if<TensorCase>(&c.args[i])) {
      if (t->none) {
        s += "None";
        continue;
      }
      s += std::string(dtype_name(t->dtype)) + shape_text(t->sizes) + " " + to_string(t->layout);
      if (t->slack) s += "(" + std::to_string(t->slack) + ")";
      if (t->layout == Layout::View)
        s += " of " + contract.buffers[t->carved.buffer].name + " (strides " + shape_text(t->carved.strides) +
             ", offset " + std::to_string(t->carved.offset) + ")";
      if (t->form != ValueForm::Drawn) s += std::string(" ") + to_string(t->form);
    } else if (!contract.args[i].from_state.empty()) {
      s += "python_state[\"" + contract.args[i].from_state + "\"]";
    } else {
      s += scalar_text(std::get<ScalarValue>(c.args[i]));
    }
  }
  if (c.inplace >= 0) s += " | in place: " + contract.inplace_text(c.inplace);
  if (c.misuse) s += " | misuse: " + misuse_text(c, contract);
  if (c.fenced) s += " | in fenced memory";
  return s;
}

std::string case_json(const Case& c, const Contract& contract) {
  JsonWriter w;
  w.begin_object();
  for (const auto& v : contract.values) w.key(v.name).value(c.values[v.slot]);
  w.key("args").begin_object();
  for (size_t i = 0; i < contract.args.size(); ++i) {
    w.key(contract.args[i].name);
    if (const auto* t = std::get_if<TensorCase>(&c.args[i])) {
      if (t->none) {
        w.null();
        continue;
      }
      w.begin_object();
      w.key("dtype").value(dtype_name(t->dtype));
      w.key("shape").begin_array();
      for (int64_t d : t->sizes) w.value(d);
      w.end_array();
      w.key("layout").value(to_string(t->layout));
      if (t->slack) w.key("slack").value(t->slack);
      if (t->layout == Layout::View) {  // what the contract's view: gives; a case file recomputes it
        w.key("view_of").value(contract.buffers[t->carved.buffer].name);
        w.key("strides").begin_array();
        for (int64_t d : t->carved.strides) w.value(d);
        w.end_array();
        w.key("offset").value(t->carved.offset);
      }
      if (t->form != ValueForm::Drawn) w.key("values").value(to_string(t->form));
      w.end_object();
    } else {
      std::visit(
          [&](const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) w.value("default");
            else w.value(x);
          },
          std::get<ScalarValue>(c.args[i]));
    }
  }
  w.end_object();
  if (c.inplace >= 0) {
    const InplaceSpec& s = contract.inplace[c.inplace];
    w.key("inplace").begin_array().value(contract.args[s.into].name).value(contract.args[s.from].name).end_array();
  }
  if (c.misuse) write_misuse(w, c.misuse, contract);
  if (c.fenced) w.key("memory").value("fenced");
  w.key("data_seed").value(c.data_seed);
  w.end_object();
  return w.str();
}

int64_t case_numel(const Case& c) {
  int64_t n = 0;
  for (const auto& a : c.args)
    if (const auto* t = std::get_if<TensorCase>(&a)) {
      int64_t e = 1;
      for (int64_t d : t->sizes) e *= d;
      n += t->none ? 0 : e;
    }
  return n;
}

}  // namespace opc
