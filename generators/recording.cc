#include "generators/recording.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "spec/source_loc.h"
#include "spec/text_guard.h"
#include "generators/case.h"
#include "support/names.h"

namespace opc {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& why) { throw RecordingError(where + ": " + why); }

YAML::Node need(const YAML::Node& map, const std::string& key, const std::string& where) {
  YAML::Node n = map[key];
  if (!n) bad(where, "missing \"" + key + "\"");
  return n;
}

template <class T>
T as(const YAML::Node& n, const std::string& what, const std::string& where) {
  if (!n.IsScalar()) bad(where, what + " must be a " + (std::is_same_v<T, std::string> ? "string" : "number"));
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    bad(where, what + " is not a valid value: '" + n.Scalar() + "'");
  }
}

std::vector<int64_t> ints(const YAML::Node& n, const std::string& what, const std::string& where) {
  if (!n.IsSequence()) bad(where, what + " must be a list of integers");
  std::vector<int64_t> out;
  for (const auto& v : n) out.push_back(as<int64_t>(v, what, where));
  return out;
}

RecordedTensor parse_tensor(const YAML::Node& t, const std::string& where) {
  if (!t.IsMap()) bad(where, "a tensor must be an object");
  RecordedTensor r;
  r.dtype = as<std::string>(need(t, "dtype", where), "dtype", where);
  r.sizes = ints(need(t, "shape", where), "shape", where);
  r.strides = ints(need(t, "strides", where), "strides", where);
  if (r.sizes.size() != r.strides.size()) bad(where, "shape and strides differ in length");
  for (int64_t s : r.sizes)
    if (s < 0) bad(where, "a negative size in shape");
  r.offset = as<int64_t>(need(t, "offset", where), "offset", where);
  r.storage = as<int>(need(t, "storage", where), "storage", where);
  if (r.offset < 0 || r.storage < 0) bad(where, "offset and storage must be >= 0");
  if (t["storage_bytes"]) r.storage_bytes = as<int64_t>(t["storage_bytes"], "storage_bytes", where);
  if (t["align"]) r.align = as<int64_t>(t["align"], "align", where);
  if (t["contiguous"]) r.contiguous = as<bool>(t["contiguous"], "contiguous", where);
  if (t["device"]) r.device = as<std::string>(t["device"], "device", where);
  if (t["min"]) r.min = as<int64_t>(t["min"], "min", where);
  if (t["max"]) r.max = as<int64_t>(t["max"], "max", where);
  return r;
}

// A number, bool or list as JSON text, written back from the parsed node.
std::string json_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

RecordedArg parse_arg(const YAML::Node& a, const std::string& where) {
  if (!a.IsMap()) bad(where, "an argument must be an object");
  RecordedArg r;
  r.name = as<std::string>(need(a, "name", where), "name", where);
  const std::string at = where + " (argument '" + r.name + "')";
  if (const YAML::Node t = a["tensor"]) {
    r.kind = RecordedArg::Kind::Tensor;
    r.tensor = parse_tensor(t, at);
  } else if (const YAML::Node ts = a["tensors"]) {
    if (!ts.IsSequence()) bad(at, "tensors must be a list");
    r.kind = RecordedArg::Kind::Tensors;
    for (const auto& t : ts)
      if (!t.IsNull()) r.tensors.push_back(parse_tensor(t, at));  // null: a None in a Tensor?[]
  } else if (a["none"]) {
    r.kind = RecordedArg::Kind::None;
  } else if (const YAML::Node v = a["value"]) {
    r.kind = RecordedArg::Kind::Value;
    r.is_string = v.IsScalar() && v.Tag() == "!";
    r.value = r.is_string ? v.Scalar() : json_text(v);
  } else if (const YAML::Node o = a["object"]) {
    r.kind = RecordedArg::Kind::Object;
    r.value = as<std::string>(o, "object", at);
  } else {
    bad(at, "an argument needs one of tensor, tensors, none, value, object");
  }
  return r;
}

// What makes two lines the same signature: everything but the count and the ranges.
std::string signature(const RecordedCall& c) {
  std::ostringstream s;
  s << c.op << '|' << c.overload << '|' << c.site;
  auto tensor = [&](const RecordedTensor& t) {
    s << t.dtype << shape_text(t.sizes) << shape_text(t.strides) << '@' << t.offset << '#' << t.storage << '/'
      << t.storage_bytes << '^' << t.align << t.device;
  };
  for (const RecordedArg& a : c.args) {
    s << '|' << a.name << ':' << static_cast<int>(a.kind) << a.value;
    if (a.tensor) tensor(*a.tensor);
    for (const RecordedTensor& t : a.tensors) tensor(t);
  }
  return s.str();
}

void join_range(RecordedTensor& into, const RecordedTensor& from) {
  if (from.min && (!into.min || *from.min < *into.min)) into.min = from.min;
  if (from.max && (!into.max || *from.max > *into.max)) into.max = from.max;
}

// `index` maps each call of `into` by its signature.
void merge(std::vector<RecordedCall>& into, std::unordered_map<std::string, size_t>& index, RecordedCall c) {
  const auto [at, added] = index.emplace(signature(c), into.size());
  if (added) {
    into.push_back(std::move(c));
    return;
  }
  RecordedCall& d = into[at->second];
  d.calls += c.calls;
  for (std::string& p : c.programs)
    if (std::find(d.programs.begin(), d.programs.end(), p) == d.programs.end()) d.programs.push_back(std::move(p));
  for (size_t i = 0; i < d.args.size(); ++i) {
    if (d.args[i].tensor) join_range(*d.args[i].tensor, *c.args[i].tensor);
    for (size_t k = 0; k < d.args[i].tensors.size(); ++k) join_range(d.args[i].tensors[k], c.args[i].tensors[k]);
  }
}

RecordedCall parse_call(const YAML::Node& line, const std::string& where) {
  RecordedCall c;
  c.where = where;
  c.op = as<std::string>(need(line, "op", where), "op", where);
  if (c.op.find("::") == std::string::npos) bad(where, "op must be namespace::name, not '" + c.op + "'");
  c.overload = line["overload"] ? as<std::string>(line["overload"], "overload", where) : "default";
  c.site = line["site"] ? as<std::string>(line["site"], "site", where) : "";
  c.calls = as<int64_t>(need(line, "calls", where), "calls", where);
  if (c.calls < 1) bad(where, "calls must be >= 1");
  const YAML::Node args = need(line, "args", where);
  if (!args.IsSequence()) bad(where, "args must be a list");
  for (const auto& a : args) c.args.push_back(parse_arg(a, where));
  return c;
}

}  // namespace

void read_recording_text(const std::string& text, const std::string& file, std::vector<RecordedCall>& into) {
  std::istringstream in(text);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < into.size(); ++i) index.emplace(signature(into[i]), i);
  int line_no = 0;
  bool header = false;
  std::string program;  // the current session's, from its header line
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string where = file + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    YAML::Node node;
    try {
      check_contract_text(line, file);
      node = YAML::Load(line);
    } catch (const ContractError& e) {
      bad(where, e.message());
    } catch (const YAML::Exception& e) {
      bad(where, "not a JSON object (" + e.msg + (in.peek() == EOF ? "; a truncated last line: was the program killed?" : "") + ")");
    }
    if (!node.IsMap()) bad(where, "not a JSON object");
    if (node["opcontract_recording"]) {
      if (const std::string v = as<std::string>(node["opcontract_recording"], "opcontract_recording", where); v != "1")
        bad(where, "recording format " + v + ", but this opcontract reads format 1");
      header = true;
      program = node["program"] && node["program"].IsScalar() ? node["program"].Scalar() : "";
      continue;
    }
    if (!header) bad(where, "no header line before it: not a recording of python -m opcontract.record");
    RecordedCall call = parse_call(node, where);
    if (!program.empty()) call.programs.push_back(program);
    merge(into, index, std::move(call));
  }
  if (!header) bad(file, "empty: no header line (a recording of python -m opcontract.record starts with one)");
}

std::vector<RecordedCall> read_recordings(const std::vector<std::string>& paths) {
  std::vector<RecordedCall> calls;
  for (const std::string& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw RecordingError(p + ": cannot read it");
    std::stringstream s;
    s << in.rdbuf();
    read_recording_text(s.str(), p, calls);
  }
  return calls;
}

std::string recorded_tensor_text(const RecordedTensor& t) {
  return t.dtype + shape_text(t.sizes) + " strides " + shape_text(t.strides) + " offset " + std::to_string(t.offset) +
         " (storage " + std::to_string(t.storage) + ")";
}

std::string recorded_call_text(const RecordedCall& c) {
  std::vector<std::string> args;
  for (const RecordedArg& a : c.args) {
    switch (a.kind) {
      case RecordedArg::Kind::Tensor: args.push_back(a.name + "=" + recorded_tensor_text(*a.tensor)); break;
      case RecordedArg::Kind::None: args.push_back(a.name + "=None"); break;
      case RecordedArg::Kind::Value: args.push_back(a.name + "=" + (a.is_string ? "'" + a.value + "'" : a.value)); break;
      case RecordedArg::Kind::Tensors: args.push_back(a.name + "=[" + std::to_string(a.tensors.size()) + " tensors]"); break;
      case RecordedArg::Kind::Object: args.push_back(a.name + "=<" + a.value + ">"); break;
    }
  }
  return c.op + "(" + join(args) + ")" + (c.site.empty() ? "" : " at " + c.site);
}

}  // namespace opc
