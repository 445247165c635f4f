#include "generators/admission.h"

#include <ATen/core/function_schema.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "generators/layout.h"
#include "generators/view_carve.h"
#include "support/names.h"

namespace opc {
namespace {

// Why the contract does not admit the call, thrown inside admit() and caught there.
struct Rejected {
  std::string pattern, detail;
  std::optional<Widening> widen;
};
[[noreturn]] void reject(std::string pattern, std::string detail, std::optional<Widening> widen = std::nullopt) {
  throw Rejected{std::move(pattern), std::move(detail), std::move(widen)};
}

// Strides compared where they matter: dims of size 0 or 1 may have any stride.
bool same_significant_strides(const RecordedTensor& t, const std::vector<int64_t>& strides) {
  if (std::find(t.sizes.begin(), t.sizes.end(), 0) != t.sizes.end()) return true;
  for (size_t i = 0; i < t.sizes.size(); ++i)
    if (t.sizes[i] > 1 && strides[i] != t.strides[i]) return false;
  return true;
}

// Whether the tensor shares its storage with another argument of the call.
bool shares_storage(const RecordedArg& r, const std::vector<const RecordedArg*>& args) {
  return std::any_of(args.begin(), args.end(), [&](const RecordedArg* o) {
    return o != &r && o->tensor && o->tensor->storage == r.tensor->storage;
  });
}

// Where the contract's view: puts `a` at these values, when that is where the call has it
// (sizes and strides; the offset within the storage is check_sharing's).
std::optional<Carved> carved_as_recorded(const ArgSpec& a, const RecordedTensor& t, const Contract& contract,
                                         const std::vector<int64_t>& values) {
  if (!a.view) return std::nullopt;
  std::vector<int64_t> sizes;
  try {
    Carved c = carve(a, contract, values, sizes);
    if (sizes == t.sizes && same_significant_strides(t, c.strides)) return c;
  } catch (const ContractError&) {
  }
  return std::nullopt;
}

int64_t eval(const Expr& e, const std::vector<int64_t>& values, const std::vector<TensorFacts>& facts = {}) {
  try {
    return e.eval({values.data(), facts.empty() ? nullptr : facts.data()});
  } catch (const EvalError& err) {
    reject("'" + e.text() + "' cannot be evaluated", "evaluating '" + e.text() + "' failed: " + err.what());
  }
}

// The value slot an expression is, when it is one name alone ("num_tokens"), else -1.
int plain_slot(const Expr& e, const Contract& contract) {
  if (e.value_slots().size() != 1) return -1;
  const int slot = e.value_slots()[0];
  return e.text() == contract.values[slot].name ? slot : -1;
}

std::optional<int64_t> recorded_int(const RecordedArg& a) {
  if (a.kind != RecordedArg::Kind::Value || a.is_string) return std::nullopt;
  if (a.value == "true") return 1;
  if (a.value == "false") return 0;
  try {
    size_t used = 0;
    const long long v = std::stoll(a.value, &used);
    if (used == a.value.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The recorded arguments in the contract's (schema) order.
std::vector<const RecordedArg*> match_args(const RecordedCall& call, const Contract& contract) {
  std::vector<const RecordedArg*> out;
  std::vector<std::string> want, got;
  for (const ArgSpec& a : contract.args) want.push_back(a.name);
  for (const RecordedArg& a : call.args) got.push_back(a.name);
  if (want != got)
    reject("its arguments are not the contract's schema's",
           "the call's arguments (" + join(got) + ") are not the contract's schema's (" + join(want) + ")");
  for (const RecordedArg& a : call.args) out.push_back(&a);
  return out;
}

// Each value slot read off a shape entry or a scalar that is its name alone.
std::vector<std::optional<int64_t>> bind_values(const std::vector<const RecordedArg*>& args, const Contract& contract) {
  std::vector<std::optional<int64_t>> bound(contract.values.size());
  for (const ArgSpec& a : contract.args) {
    const RecordedArg& r = *args[a.index];
    if (a.is_tensor && r.tensor) {
      if (a.always_none) continue;  // judged below, with its own reason
      if (r.tensor->sizes.size() != a.shape.size())
        reject("'" + a.name + "' has another rank than its contract shape",
               "'" + a.name + "' is " + recorded_tensor_text(*r.tensor) + ": rank " +
                   std::to_string(r.tensor->sizes.size()) + ", the contract's shape has " + std::to_string(a.shape.size()));
      for (size_t i = 0; i < a.shape.size(); ++i)
        if (const int slot = plain_slot(a.shape[i], contract); slot >= 0 && !bound[slot]) bound[slot] = r.tensor->sizes[i];
    } else if (a.from_dims) {
      if (const int slot = plain_slot(*a.from_dims, contract); slot >= 0 && !bound[slot]) bound[slot] = recorded_int(r);
    }
  }
  return bound;
}

// The candidates of an unbound slot, given the slots before it (none where its range is
// empty under them); nullopt: too many to try.
std::optional<std::vector<int64_t>> candidates(const ValueSpec& v, const std::vector<int64_t>& values) {
  std::vector<int64_t> out;
  if (!v.choices.empty()) {
    for (const Expr& c : v.choices) out.push_back(eval(c, values));
    return out;
  }
  const int64_t lo = eval(v.range->first, values), hi = eval(v.range->second, values);
  if (hi - lo >= 64) return std::nullopt;
  for (int64_t x = lo; x <= hi; ++x) out.push_back(x);
  return out;
}

void check_value(const ValueSpec& v, const std::vector<int64_t>& values) {
  const int64_t x = values[v.slot];
  if (!v.choices.empty()) {
    std::vector<std::string> options;
    for (const Expr& c : v.choices) {
      if (eval(c, values) == x) return;
      options.push_back(std::to_string(eval(c, values)));
    }
    reject("'" + v.name + "' not among its choices",
           "'" + v.name + "' is " + std::to_string(x) + "; the contract's choices: " + join(options),
           Widening{"'" + v.name + "'", "choices " + join(options), x, x, true});
  }
  const int64_t lo = eval(v.range->first, values), hi = eval(v.range->second, values);
  const std::string range = "range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (x < lo || x > hi)
    reject("'" + v.name + "' outside its range", "'" + v.name + "' is " + std::to_string(x) + ", outside its " + range,
           Widening{"'" + v.name + "'", range, x, x, false, lo, hi});
}

void check_tensor(const ArgSpec& a, const RecordedArg& r, const std::vector<const RecordedArg*>& args,
                  const std::vector<int64_t>& values, const Contract& contract, TensorCase& out) {
  if (r.kind == RecordedArg::Kind::None) {
    if (!a.optional) reject("'" + a.name + "' is None but not optional", "'" + a.name + "' is None, and its schema type is not optional");
    out.none = true;
    return;
  }
  if (r.kind != RecordedArg::Kind::Tensor)
    reject("'" + a.name + "' is not a tensor", "'" + a.name + "' was recorded as a " +
                                                   (r.kind == RecordedArg::Kind::Tensors ? "list of tensors" : "non-tensor"));
  const RecordedTensor& t = *r.tensor;
  if (a.always_none)
    reject("'" + a.name + "' is a tensor where the contract always passes None",
           "'" + a.name + "' is " + recorded_tensor_text(t) + "; the contract always passes None");
  const std::optional<c10::ScalarType> dtype = parse_dtype(t.dtype);
  if (!dtype) reject("'" + a.name + "' has a dtype contracts cannot name", "'" + a.name + "' has dtype " + t.dtype);
  if (a.dtype_from >= 0) {
    const RecordedArg& src = *args[a.dtype_from];
    if (src.tensor && src.tensor->dtype != t.dtype)
      reject("'" + a.name + "' and '" + src.name + "' differ in dtype",
             "'" + a.name + "' is " + t.dtype + ", '" + src.name + "' " + src.tensor->dtype + "; the contract ties them");
  } else if (std::find(a.dtypes.begin(), a.dtypes.end(), *dtype) == a.dtypes.end()) {
    std::vector<std::string> names;
    for (c10::ScalarType d : a.dtypes) names.push_back(dtype_name(d));
    reject("'" + a.name + "' has a dtype the contract does not draw",
           "'" + a.name + "' is " + t.dtype + "; the contract draws " + join(names));
  }
  std::vector<int64_t> want;
  for (const Expr& d : a.shape) want.push_back(eval(d, values));
  if (want != t.sizes)
    reject("'" + a.name + "' has a shape the bound dims do not give",
           "'" + a.name + "' is " + shape_text(t.sizes) + " where the dims give " + shape_text(want));
  // A tensor sharing its storage is taken as the view of its buffer first (check_sharing
  // holds the siblings to it); one alone as a view only when no other layout matches.
  const bool shares = shares_storage(r, args);
  std::optional<Carved> carved = shares ? carved_as_recorded(a, t, contract, values) : std::nullopt;
  std::optional<Layout> layout = carved ? std::optional(Layout::View) : layout_matching(t, a.layouts);
  if (!layout && !shares && (carved = carved_as_recorded(a, t, contract, values))) layout = Layout::View;
  if (!layout) {
    std::vector<std::string> names;
    for (Layout l : a.layouts) names.push_back(to_string(l));
    reject("'" + a.name + "' is laid out as no listed layout",
           "'" + a.name + "' is " + recorded_tensor_text(t) + "; the contract draws " + join(names));
  }
  if ((a.values.kind == ValueDist::Kind::Ints || a.values.kind == ValueDist::Kind::Offsets) && t.min && t.max) {
    const int64_t lo = a.values.kind == ValueDist::Kind::Ints ? eval(a.values.lo, values) : 0;
    const int64_t hi = eval(a.values.hi, values);
    const std::string range = "values: range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (*t.min < lo || *t.max > hi)
      reject("'" + a.name + "' holds values outside its values: range",
             "'" + a.name + "' holds [" + std::to_string(*t.min) + ", " + std::to_string(*t.max) + "], outside its " + range,
             Widening{"the values of '" + a.name + "'", range, *t.min, *t.max, false, lo, hi});
  }
  out.dtype = *dtype;
  out.sizes = t.sizes;
  out.layout = *layout;
  if (carved) out.carved = *carved;
  // How far the layout departs from dense, as recorded: the padding of each row, the rows
  // before a narrowed view, the elements before a misaligned one.
  if (*layout == Layout::RowStrided) out.slack = t.strides[t.strides.size() - 2] - t.sizes.back();
  if (*layout == Layout::Narrow && !t.sizes.empty() && t.strides[0] > 0 && t.offset % t.strides[0] == 0)
    out.slack = std::min<int64_t>(t.offset / t.strides[0], 64);
  if (*layout == Layout::Misaligned) out.slack = t.offset % 8 ? t.offset % 8 : 1;
}

// Whether a recorded scalar is this candidate value; monostate (the schema's default) is
// compared with the schema's default.
bool same_scalar(const ScalarValue& choice, const RecordedArg& r, const c10::Argument& schema_arg) {
  if (std::holds_alternative<std::monostate>(choice)) {
    const auto& d = schema_arg.default_value();
    if (!d || d->isNone()) return r.kind == RecordedArg::Kind::None;
    // A float default (1.) is the value the program passed when it passed 1.0.
    if (d->isDouble()) return same_scalar(ScalarValue(d->toDouble()), r, schema_arg);
    std::ostringstream s;
    s << *d;
    return s.str() == r.value || (d->isBool() && r.value == (d->toBool() ? "true" : "false"));
  }
  if (const auto* b = std::get_if<bool>(&choice)) return r.value == (*b ? "true" : "false");
  if (const auto* i = std::get_if<int64_t>(&choice)) return recorded_int(r) == *i;
  if (const auto* s = std::get_if<std::string>(&choice)) return r.is_string && r.value == *s;
  const double want = std::get<double>(choice);
  try {
    const double got = std::stod(r.value);
    return got == want || std::fabs(got - want) <= 1e-12 * std::max(std::fabs(got), std::fabs(want));
  } catch (const std::exception&) {
    return false;
  }
}

ScalarValue check_scalar(const ArgSpec& a, const RecordedArg& r, const std::vector<int64_t>& values,
                         const Contract& contract) {
  if (!a.from_state.empty()) return a.from_state;  // an object the hook makes: anything the program passed
  if (a.from_dims) {
    const int64_t want = eval(*a.from_dims, values);
    if (recorded_int(r) != want)
      reject("'" + a.name + "' is not what the dims give",
             "'" + a.name + "' is " + r.value + "; the dims give " + std::to_string(want) + " (" + a.from_dims->text() + ")");
    return a.from_dims->type() == ExprType::Bool ? ScalarValue(want != 0) : ScalarValue(want);
  }
  const c10::Argument& schema_arg = contract.schema->arguments()[a.index];
  for (const ScalarValue& c : a.choices)
    if (same_scalar(c, r, schema_arg)) return c;
  std::vector<std::string> options;
  for (const ScalarValue& c : a.choices) options.push_back(scalar_text(c));
  const std::string got = r.kind == RecordedArg::Kind::None ? "None" : r.is_string ? "'" + r.value + "'" : r.value;
  reject("'" + a.name + "' not among its choices", "'" + a.name + "' is " + got + "; the contract's choices: " + join(options));
}

// Whether the arguments sharing one recorded storage are the contract's views of one buffer,
// lying as far apart as the view: steps put them.
bool views_of_one_buffer(const std::vector<int>& users, const std::vector<const RecordedArg*>& args, const Case& c) {
  const auto& first = std::get<TensorCase>(c.args[users[0]]);
  for (int u : users) {
    const auto& t = std::get<TensorCase>(c.args[u]);
    if (t.layout != Layout::View || first.layout != Layout::View || t.carved.buffer != first.carved.buffer ||
        args[u]->tensor->offset - args[users[0]]->tensor->offset != t.carved.offset - first.carved.offset)
      return false;
  }
  return true;
}

// Arguments sharing a storage: admitted as the contract's views of one buffer, or as an
// aliasing.inplace use (the same tensor for both); that use's index, or -1.
int check_sharing(const std::vector<const RecordedArg*>& args, const Case& c, const Contract& contract) {
  std::map<int, int> view_of_buffer;  // buffer -> the first argument taken as its view
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* t = std::get_if<TensorCase>(&c.args[i]);
    if (!t || t->none || t->layout != Layout::View) continue;
    const auto [first, fresh] = view_of_buffer.emplace(t->carved.buffer, static_cast<int>(i));
    if (!fresh && args[first->second]->tensor->storage != args[i]->tensor->storage)
      reject("views of one buffer in separate storages",
             "'" + args[first->second]->name + "' and '" + args[i]->name + "' are views of buffer '" +
                 contract.buffers[t->carved.buffer].name + "' in the contract, of separate storages in the call");
  }
  // Tensors a state hook makes (key and value caches of one storage) are the program's own.
  std::map<int, std::vector<int>> by_storage;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i]->tensor && std::holds_alternative<TensorCase>(c.args[i]))
      by_storage[args[i]->tensor->storage].push_back(static_cast<int>(i));
  int inplace = -1;
  for (const auto& [storage, users] : by_storage) {
    if (users.size() < 2 || views_of_one_buffer(users, args, c)) continue;
    const RecordedTensor &x = *args[users[0]]->tensor, &y = *args[users[1]]->tensor;
    const bool same_tensor = users.size() == 2 && x.offset == y.offset && x.sizes == y.sizes && x.strides == y.strides;
    for (size_t k = 0; k < contract.inplace.size() && same_tensor; ++k) {
      const InplaceSpec& s = contract.inplace[k];
      if (std::minmax(s.into, s.from) == std::minmax(users[0], users[1])) inplace = static_cast<int>(k);
    }
    if (inplace >= 0 && same_tensor) continue;
    std::vector<std::string> names, offsets;
    for (int u : users) {
      names.push_back("'" + args[u]->name + "'");
      offsets.push_back(std::to_string(args[u]->tensor->offset));
    }
    reject(join(names, " and ") + " share one storage",
           join(names, " and ") + " are views of one storage (offsets " + join(offsets) +
               "): the generators make arguments that share a storage only as views of one of the contract's "
               "buffers (view:) or as aliasing.inplace states");
  }
  return inplace;
}

// TensorFacts in Scope::tensors order, from the recorded geometry.
std::vector<TensorFacts> recorded_facts(const std::vector<const RecordedArg*>& args, const Contract& contract) {
  std::vector<TensorFacts> facts;
  for (int arg : contract.tensor_of_scope) {
    const RecordedArg& r = *args[arg];
    TensorFacts f;
    if (!r.tensor) {
      f.none = true;
    } else {
      const RecordedTensor& t = *r.tensor;
      f.sizes = t.sizes.data();
      f.strides = t.strides.data();
      f.dim = static_cast<int64_t>(t.sizes.size());
      f.contiguous = t.contiguous;
      f.storage_offset = t.offset;
      if (const auto d = parse_dtype(t.dtype)) {
        f.element_size = static_cast<int64_t>(c10::elementSize(*d));
        f.dtype = static_cast<int64_t>(*d);
      }
      f.alignment = t.align;
    }
    facts.push_back(f);
  }
  return facts;
}

void check_relations(const std::vector<const RecordedArg*>& args, const std::vector<int64_t>& values,
                     const Contract& contract) {
  const std::vector<TensorFacts> facts = recorded_facts(args, contract);
  for (const NamedExpr& c : contract.constraints)
    if (!eval(c.expr, values, facts))
      reject("it breaks the constraint '" + c.expr.text() + "'", "it breaks the contract's constraint '" + c.expr.text() + "'");
  for (const NamedExpr& r : contract.requires_)
    if (!eval(r.expr, values, facts))
      reject("it breaks requires '" + r.expr.text() + "'",
             "it breaks requires '" + r.expr.text() + "' (the contract says the op must refuse such a call)");
}

// The checks of one full assignment of the values: the Case, or Rejected.
Case judge(const std::vector<const RecordedArg*>& args, const std::vector<int64_t>& values, const Contract& contract) {
  for (const ValueSpec& v : contract.values) check_value(v, values);
  Case c;
  c.values = values;
  c.args.resize(contract.args.size());
  for (const ArgSpec& a : contract.args) {
    if (a.is_tensor) {
      TensorCase t;
      check_tensor(a, *args[a.index], args, values, contract, t);
      c.args[a.index] = t;
    } else {
      c.args[a.index] = check_scalar(a, *args[a.index], values, contract);
    }
  }
  c.inplace = check_sharing(args, c, contract);
  check_relations(args, values, contract);
  return c;
}

// Throws the rejection of a recorded tensor whose sizes the slots assigned so far (up to
// `slot`) already contradict, so that no assignment of the later slots is tried under them.
void check_sizes_so_far(const std::vector<const RecordedArg*>& args, const Contract& contract,
                        const std::vector<int64_t>& values, int slot) {
  for (const ArgSpec& a : contract.args) {
    const RecordedArg& r = *args[a.index];
    if (!a.is_tensor || !r.tensor || a.always_none || r.tensor->sizes.size() != a.shape.size()) continue;
    std::string want;  // "[4, ?]": the sizes the slots so far give
    bool differs = false;
    for (size_t i = 0; i < a.shape.size(); ++i) {
      const Expr& d = a.shape[i];
      want += i ? ", " : "[";
      if (d.uses_tensors() || (!d.value_slots().empty() && d.value_slots().back() > slot)) {
        want += "?";
        continue;
      }
      const int64_t size = eval(d, values);
      want += std::to_string(size);
      differs |= size != r.tensor->sizes[i];
    }
    if (differs)
      reject("'" + a.name + "' has a shape the bound dims do not give",
             "'" + a.name + "' is " + shape_text(r.tensor->sizes) + " where the dims give " + want + "]" +
                 (want.find('?') == std::string::npos ? "" : " (?: a dim not chosen yet)"));
  }
}

// Tries the assignments of the unbound slots, in slot order, until one is admitted; the
// first rejection otherwise. At most kMaxTries assignments; a prefix of slots that already
// contradicts a recorded size is not extended.
constexpr int kMaxTries = 4096;

std::optional<Case> search(const std::vector<const RecordedArg*>& args, const Contract& contract,
                           const std::vector<std::optional<int64_t>>& bound, std::vector<int64_t>& values, size_t slot,
                           int& tries, std::optional<Rejected>& first, std::optional<Rejected>& pruned) {
  if (slot == values.size()) {
    ++tries;
    try {
      return judge(args, values, contract);
    } catch (const Rejected& r) {
      if (!first) first = r;
      return std::nullopt;
    }
  }
  auto sizes_agree = [&] {
    try {
      check_sizes_so_far(args, contract, values, static_cast<int>(slot));
      return true;
    } catch (const Rejected& r) {
      if (!pruned) pruned = r;  // said only when no whole assignment was judged
      return false;
    }
  };
  if (bound[slot]) {
    values[slot] = *bound[slot];
    if (!sizes_agree()) return std::nullopt;
    return search(args, contract, bound, values, slot + 1, tries, first, pruned);
  }
  const ValueSpec& v = contract.values[slot];
  const std::optional<std::vector<int64_t>> options = candidates(v, values);
  if (!options)
    reject("'" + v.name + "' cannot be bound from the call",
           "no shape entry or scalar is '" + v.name + "' alone, and its range is too wide to try");
  for (int64_t x : *options) {
    if (tries >= kMaxTries) break;
    values[slot] = x;
    if (!sizes_agree()) continue;
    if (auto c = search(args, contract, bound, values, slot + 1, tries, first, pruned)) return c;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Layout> layout_matching(const RecordedTensor& t, const std::vector<Layout>& allowed) {
  const size_t rank = t.sizes.size();
  for (Layout l : allowed) {
    if (l == Layout::View) continue;  // where a view lies depends on the dims (carved_as_recorded)
    if (!layout_applies(l, rank) && l != Layout::Contiguous) continue;
    TensorCase c;
    c.sizes = t.sizes;
    c.layout = l;
    if (l == Layout::RowStrided) c.slack = t.strides[rank - 2] - t.sizes[rank - 1];
    if (l == Layout::RowStrided && c.slack <= 0) continue;
    // Misaligned differs from contiguous only in its data pointer.
    if (l == Layout::Misaligned && t.align >= 16) continue;
    if (same_significant_strides(t, geometry_of(c).strides)) return l;
  }
  return std::nullopt;
}

Contract favouring_calls(const Contract& contract, const std::vector<Case>& admitted) {
  Contract c = contract;
  for (ValueSpec& v : c.values) {
    if (!v.range) continue;
    std::vector<int64_t> seen;
    for (const Case& k : admitted)
      if (std::find(seen.begin(), seen.end(), k.values[v.slot]) == seen.end()) seen.push_back(k.values[v.slot]);
    for (int64_t x : seen) v.favor.push_back(Expr::constant(x));
  }
  return c;
}

Admission admit(const RecordedCall& call, const Contract& contract) {
  Admission out;
  try {
    const std::vector<const RecordedArg*> args = match_args(call, contract);
    const std::vector<std::optional<int64_t>> bound = bind_values(args, contract);
    std::vector<int64_t> values(contract.values.size());
    int tries = 0;
    std::optional<Rejected> first, pruned;
    out.as_case = search(args, contract, bound, values, 0, tries, first, pruned);
    if (!out.as_case)
      throw first ? *first : pruned ? *pruned : Rejected{"no value assignment tried", "no value assignment was tried"};
    out.admitted = true;
  } catch (const Rejected& r) {
    out.pattern = r.pattern;
    out.detail = r.detail;
    out.widen = r.widen;
  }
  return out;
}

}  // namespace opc
