#include "generators/case_file.h"

#include <filesystem>

#include "generators/case_gen.h"
#include "generators/edge_values.h"
#include "generators/misuse.h"
#include "generators/view_carve.h"
#include "spec/text_guard.h"
#include "spec/yaml_loc.h"
#include "support/atomic_file.h"
#include "support/json_writer.h"

namespace opc {
namespace {

YAML::Node need(const std::string& file, const YAML::Node& map, const std::string& key) {
  YAML::Node n = map[key];
  if (!n) throw ContractError(yaml_loc(file, map), "the case file lacks '" + key + "'");
  return n;
}

template <class T>
T as(const std::string& file, const YAML::Node& n, const std::string& what) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw ContractError(yaml_loc(file, n), what + " has the wrong type");
  }
}

ScalarValue scalar_of(const std::string& file, const YAML::Node& n, const ArgSpec& a) {
  if (!n.IsScalar()) throw ContractError(yaml_loc(file, n), "args." + a.name + " must be a scalar");
  // The case holds the same kind of value the contract chose from (or computes).
  const size_t kind = !a.from_dims                            ? a.choices.front().index()
                      : a.from_dims->type() == ExprType::Bool ? ScalarValue(false).index()
                                                              : ScalarValue(int64_t{0}).index();
  const std::string what = "args." + a.name;
  switch (kind) {
    case 0:
      if (n.Scalar() != "default") throw ContractError(yaml_loc(file, n), what + " must be \"default\"");
      return ScalarValue{};
    case 1:
      return as<bool>(file, n, what);
    case 2:
      return as<int64_t>(file, n, what);
    case 3:
      return as<double>(file, n, what);
    default:
      return n.Scalar();
  }
}

TensorCase tensor_of(const std::string& file, const YAML::Node& n, const ArgSpec& a) {
  TensorCase t;
  if (n.IsNull()) {
    t.none = true;
    return t;
  }
  if (!n.IsMap()) throw ContractError(yaml_loc(file, n), "args." + a.name + " must be a tensor or null");
  const YAML::Node dtype = need(file, n, "dtype");
  const auto d = parse_dtype(as<std::string>(file, dtype, "dtype"));
  if (!d) throw ContractError(yaml_loc(file, dtype), "unknown dtype '" + dtype.Scalar() + "'");
  t.dtype = *d;
  const YAML::Node shape = need(file, n, "shape");
  if (!shape.IsSequence() || shape.size() > 16)
    throw ContractError(yaml_loc(file, shape), "shape must be a list of at most 16 sizes");
  for (const auto& s : shape) t.sizes.push_back(as<int64_t>(file, s, "a size"));
  const YAML::Node layout = need(file, n, "layout");
  const auto l = parse_layout(as<std::string>(file, layout, "layout"));
  if (!l) throw ContractError(yaml_loc(file, layout), "unknown layout '" + layout.Scalar() + "'");
  t.layout = *l;
  if (const YAML::Node s = n["slack"]) t.slack = as<int64_t>(file, s, "slack");
  if (const YAML::Node v = n["values"]) {
    const auto form = parse_value_form(as<std::string>(file, v, "values"));
    if (!form) throw ContractError(yaml_loc(file, v), "unknown values '" + v.Scalar() + "'");
    t.form = *form;
  }
  return t;
}

// The case's "misuse" (case_json's form): names checked here, the rest by misuse_misfit.
Misuse misuse_of(const std::string& file, const YAML::Node& n, const Contract& contract) {
  if (!n.IsMap()) throw ContractError(yaml_loc(file, n), "misuse must be a mapping");
  Misuse m;
  const YAML::Node kind = need(file, n, "kind");
  const auto k = parse_misuse_kind(as<std::string>(file, kind, "misuse.kind"));
  if (!k) throw ContractError(yaml_loc(file, kind), "misuse.kind must be " + misuse_kind_names());
  m.kind = *k;
  const YAML::Node arg = need(file, n, "arg");
  const std::string name = as<std::string>(file, arg, "misuse.arg");
  for (const auto& a : contract.args)
    if (a.name == name) m.arg = a.index;
  if (m.arg < 0) throw ContractError(yaml_loc(file, arg), "misuse.arg: the contract has no argument '" + name + "'");
  switch (m.kind) {
    case MisuseKind::Size: {
      m.dim = as<int>(file, need(file, n, "dim"), "misuse.dim");
      const YAML::Node change = need(file, n, "change");
      const auto ch = parse_size_change(as<std::string>(file, change, "misuse.change"));
      if (!ch)
        throw ContractError(yaml_loc(file, change), "misuse.change must be minus_one, to_zero, plus_one or double");
      m.value = static_cast<int64_t>(*ch);
      break;
    }
    case MisuseKind::Rank:
      m.value = as<int64_t>(file, need(file, n, "change"), "misuse.change");
      break;
    case MisuseKind::Dtype: {
      const YAML::Node dtype = need(file, n, "dtype");
      const auto d = parse_dtype(as<std::string>(file, dtype, "misuse.dtype"));
      if (!d) throw ContractError(yaml_loc(file, dtype), "unknown dtype '" + dtype.Scalar() + "'");
      m.value = static_cast<int64_t>(*d);
      break;
    }
    case MisuseKind::Layout: {
      const YAML::Node layout = need(file, n, "layout");
      const auto l = parse_layout(as<std::string>(file, layout, "misuse.layout"));
      if (!l) throw ContractError(yaml_loc(file, layout), "unknown layout '" + layout.Scalar() + "'");
      m.value = static_cast<int64_t>(*l);
      break;
    }
    case MisuseKind::Index:
    case MisuseKind::Scalar:
      m.value = as<int64_t>(file, need(file, n, "value"), "misuse.value");
      break;
    case MisuseKind::None:
      break;
  }
  return m;
}

}  // namespace

bool stays_inside(const std::string& path) {
  const std::filesystem::path p(path);
  if (path.empty() || p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

void write_case_file(const std::string& path, const CaseFileRecord& r, const Case& c, const Contract& contract) {
  JsonWriter w;
  w.begin_object();
  w.key("contract").value(r.contract);
  w.key("target").value(r.target);
  w.key("clause").value(to_string_view(r.clause));
  w.key("mode").value(r.mode ? to_string(*r.mode) : "");
  w.key("seed").value(r.seed);
  w.key("found_at").value(r.found_at);
  w.key("message").value(r.message);
  w.key("case").raw(case_json(c, contract));
  w.end_object();
  write_file_atomically(path, "# opcontract case: replay with `opcontract replay " + path + "`\n" + w.str() + "\n");
}

CaseFileRecord read_case_file(const std::string& path) { return read_case_text(read_contract_file(path), path); }

CaseFileRecord read_case_text(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    check_contract_text(text, path);
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ContractError({path, e.mark.line + 1, e.mark.column + 1}, "not a case file: " + e.msg);
  }
  if (!root.IsMap()) throw ContractError({path, 1, 1}, "not a case file: expected a mapping");
  CaseFileRecord r;
  r.file = path;
  auto text_of = [&](const std::string& key) { return as<std::string>(path, need(path, root, key), key); };
  r.contract = text_of("contract");
  r.target = text_of("target");
  const std::optional<Clause> clause = clause_named(text_of("clause"));
  if (!clause) throw ContractError(yaml_loc(path, root["clause"]), "clause: not a clause (" + clause_list() + ")");
  r.clause = *clause;
  if (const std::string mode = text_of("mode"); !mode.empty()) {
    r.mode = mode_named(mode);
    if (!r.mode) throw ContractError(yaml_loc(path, root["mode"]), "mode: '" + mode + "' is no mode");
  }
  r.message = text_of("message");
  r.seed = as<uint64_t>(path, need(path, root, "seed"), "seed");
  r.found_at = as<int>(path, need(path, root, "found_at"), "found_at");
  r.case_node = need(path, root, "case");
  if (!r.case_node.IsMap()) throw ContractError(yaml_loc(path, r.case_node), "case must be a mapping");
  return r;
}

Case parse_case(const CaseFileRecord& r, const Contract& contract) {
  const std::string& f = r.file;
  const YAML::Node& n = r.case_node;
  Case c;
  c.values.assign(contract.values.size(), 0);
  for (const auto& v : contract.values) c.values[v.slot] = as<int64_t>(f, need(f, n, v.name), v.name);
  const YAML::Node args = need(f, n, "args");
  if (!args.IsMap()) throw ContractError(yaml_loc(f, args), "args must be a mapping");
  for (const auto& a : contract.args) {
    const YAML::Node v = need(f, args, a.name);
    if (a.is_tensor) c.args.emplace_back(tensor_of(f, v, a));
    else c.args.emplace_back(scalar_of(f, v, a));
  }
  c.data_seed = as<uint64_t>(f, need(f, n, "data_seed"), "data_seed");
  if (const YAML::Node in = n["inplace"]) {
    if (!in.IsSequence() || in.size() != 2)
      throw ContractError(yaml_loc(f, in), "inplace must be [argument, argument]");
    const std::string into = as<std::string>(f, in[0], "inplace"), from = as<std::string>(f, in[1], "inplace");
    for (size_t k = 0; k < contract.inplace.size(); ++k)
      if (contract.args[contract.inplace[k].into].name == into && contract.args[contract.inplace[k].from].name == from)
        c.inplace = static_cast<int>(k);
    if (c.inplace < 0)
      throw ContractError(yaml_loc(f, in), "inplace: " + contract.file + " lists no in-place use of '" + into +
                                               "' as '" + from + "' (aliasing.inplace)");
  }
  if (const YAML::Node m = n["misuse"]) c.misuse = misuse_of(f, m, contract);
  if (const YAML::Node m = n["memory"]) {
    if (as<std::string>(f, m, "memory") != "fenced")
      throw ContractError(yaml_loc(f, m), "memory must be \"fenced\" (a valid call in fenced memory), or left out");
    c.fenced = true;
  }
  std::string why;
  try {  // views lie where the contract's view: puts them at the case's dims
    carve_views(c, contract);
  } catch (const ContractError& e) {
    why = e.message();
  }
  if (why.empty()) why = case_misfit(c, contract);
  if (why.empty()) why = misuse_misfit(c, contract);
  if (!why.empty()) throw ContractError(yaml_loc(f, n), "the case does not fit " + contract.file + ": " + why);
  return c;
}

}  // namespace opc
