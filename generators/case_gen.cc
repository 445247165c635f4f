#include "generators/case_gen.h"

#include <rapidcheck.h>
#include <rapidcheck/GenerationFailure.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <optional>

#include "generators/dim_gen.h"
#include "generators/edge_values.h"
#include "generators/layout.h"
#include "generators/view_carve.h"

namespace opc {
namespace {

// An expression over the values drawn so far; an evaluation error (overflow, division by
// zero) is the contract's, reported where `what` is written.
int64_t eval_values(const Expr& e, const std::vector<int64_t>& values, const SourceLoc& where,
                    const std::string& what) {
  try {
    return e.eval({values.data(), nullptr});
  } catch (const EvalError& err) {
    throw ContractError(where, what + ": " + err.what());
  }
}

// One context value or dim. `values` holds everything declared before it.
int64_t pick_value(const ValueSpec& v, std::vector<int64_t>& values) {
  const std::string what = (v.is_context ? "context." : "dims.") + v.name;
  if (!v.range) {
    std::vector<int64_t> choices;
    for (const auto& e : v.choices) choices.push_back(eval_values(e, values, v.loc, what));
    return *choice_gen(std::move(choices));
  }
  const int64_t lo = eval_values(v.range->first, values, v.loc, what);
  const int64_t hi = eval_values(v.range->second, values, v.loc, what);
  if (hi < lo)
    throw ContractError(v.loc, what + ": the range is empty: [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "]");
  std::vector<Family> favor;
  for (const auto& e : v.favor) {
    // `k` lives in this value's own slot while favoured members are computed.
    auto at_k = [e, with_k = values, slot = v.slot](int64_t k) mutable -> std::optional<int64_t> {
      with_k[slot] = k;
      try {
        return e.eval({with_k.data(), nullptr});
      } catch (const EvalError&) {
        return std::nullopt;
      }
    };
    const std::vector<int>& reads = e.value_slots();
    if (std::find(reads.begin(), reads.end(), v.slot) != reads.end()) {
      favor.push_back(std::move(at_k));
      continue;
    }
    // A favoured constant (`favor: [1, 7]`, or over other values only): one evaluation,
    // not one per k the family is enumerated over; none when it cannot be evaluated.
    if (const std::optional<int64_t> value = at_k(0)) favor.push_back(Family::single(*value));
  }
  return *dim_gen(lo, hi, std::move(favor));
}

std::vector<int64_t> shape_of(const ArgSpec& a, const std::vector<int64_t>& values) {
  std::vector<int64_t> sizes;
  for (const auto& d : a.shape)
    sizes.push_back(eval_values(d, values, a.loc, "args." + a.name + ".shape"));
  return sizes;
}

// A scalar argument given by an expression over the dims (`head_size: hs`).
ScalarValue scalar_from_dims(const ArgSpec& a, const std::vector<int64_t>& values) {
  const int64_t v = eval_values(*a.from_dims, values, a.loc, "args." + a.name);
  if (a.from_dims->type() == ExprType::Bool) return v != 0;
  return v;
}

// Whether the case's two tensors of inplace spec `k` can be one: same dtype and sizes, and
// the same layout, so that constraints and requires read the same facts of both.
bool inplace_fits(const Case& k, const Contract& c, int spec) {
  const InplaceSpec& s = c.inplace[spec];
  const auto& into = std::get<TensorCase>(k.args[s.into]);
  const auto& from = std::get<TensorCase>(k.args[s.from]);
  return !into.none && !from.none && into.dtype == from.dtype && into.sizes == from.sizes &&
         into.layout == from.layout && into.slack == from.slack && from.layout != Layout::View;
}

// Refuses a case whose tensors would take more than kMaxCaseElements of storage in all,
// before anything is allocated. Cases with a negative size are left to case_is_valid.
void check_case_size(const Case& k, const Contract& c) {
  int64_t total = 0;
  std::vector<bool> buffer_counted(c.buffers.size());
  for (const auto& a : c.args) {
    const auto* t = std::get_if<TensorCase>(&k.args[a.index]);
    if (!t || t->none ||
        std::any_of(t->sizes.begin(), t->sizes.end(), [](int64_t d) { return d < 0; }))
      continue;
    if (t->layout == Layout::View) {  // the views of a buffer take its storage once
      if (buffer_counted[t->carved.buffer]) continue;
      buffer_counted[t->carved.buffer] = true;
    }
    if (__builtin_add_overflow(total, storage_extent(*t), &total)) total = INT64_MAX;
    if (total > kMaxCaseElements)
      throw ContractError(a.loc, "args." + a.name + ": the dims allow a case too large to run (" +
                                     describe(k, c) + "): its tensors take " +
                                     (total == INT64_MAX ? "2^63 or more" : std::to_string(total)) +
                                     " elements, over the limit of " +
                                     std::to_string(kMaxCaseElements) +
                                     " (2^28) per case; narrow the dims' ranges");
  }
}

TensorCase pick_tensor(const ArgSpec& a, const std::vector<int64_t>& values) {
  TensorCase t;
  if (a.always_none || (a.optional && *rc::gen::inRange(0, 5) == 0)) {
    t.none = true;
    return t;
  }
  t.sizes = shape_of(a, values);
  std::vector<Layout> usable;
  for (Layout l : a.layouts)
    if (layout_applies(l, t.sizes.size())) usable.push_back(l);
  if (!usable.empty()) t.layout = *choice_gen(usable);
  if (t.layout == Layout::Narrow) t.slack = *rc::gen::inRange<int64_t>(1, 5);
  if (t.layout == Layout::RowStrided) t.slack = *rc::gen::inRange<int64_t>(1, 9);
  if (t.layout == Layout::Misaligned) t.slack = *rc::gen::inRange<int64_t>(1, 8);
  if (!a.dtypes.empty()) t.dtype = *choice_gen(a.dtypes);
  return t;
}

// Edge values (generators/edge_values.h), drawn last so that everything drawn before them
// is what it was without them. An in-place pair is one tensor: one form.
void pick_value_forms(Case& k, const Contract& c) {
  for (const auto& a : c.args) {
    auto* t = std::get_if<TensorCase>(&k.args[a.index]);
    if (t && !t->none) t->form = *edge_form_gen(edge_forms(a, t->dtype));
  }
  if (k.inplace >= 0)
    std::get<TensorCase>(k.args[c.inplace[k.inplace].into]).form =
        std::get<TensorCase>(k.args[c.inplace[k.inplace].from]).form;
}

Case pick_case(const Contract& c) {
  Case k;
  k.values.assign(c.values.size(), 0);
  for (const auto& v : c.values) k.values[v.slot] = pick_value(v, k.values);
  k.args.reserve(c.args.size());
  for (const auto& a : c.args) {
    if (a.is_tensor) k.args.emplace_back(pick_tensor(a, k.values));
    else if (a.from_dims) k.args.emplace_back(scalar_from_dims(a, k.values));
    else k.args.emplace_back(*choice_gen(a.choices));
  }
  // Copied dtypes resolve along their chain (the loader rejects cycles).
  for (const auto& a : c.args) {
    if (a.dtype_from < 0) continue;
    const ArgSpec* src = &a;
    while (src->dtype_from >= 0) src = &c.args[src->dtype_from];
    std::get<TensorCase>(k.args[a.index]).dtype = std::get<TensorCase>(k.args[src->index]).dtype;
  }
  carve_views(k, c);
  // One case in four is also called in place, when its tensors allow; shrinking goes to
  // separate tensors.
  if (const int n = static_cast<int>(c.inplace.size()); n > 0) {
    std::vector<int> picks(3 * n, -1);
    for (int spec = 0; spec < n; ++spec) picks.push_back(spec);
    const int pick = *choice_gen(std::move(picks));
    if (pick >= 0 && std::get<TensorCase>(k.args[c.inplace[pick].from]).layout != Layout::View) {
      auto& into = std::get<TensorCase>(k.args[c.inplace[pick].into]);
      const auto& from = std::get<TensorCase>(k.args[c.inplace[pick].from]);
      into.layout = from.layout;  // one tensor: one layout
      into.slack = from.slack;
      if (inplace_fits(k, c, pick)) k.inplace = pick;
    }
  }
  // Full 64 bits whatever the size (arbitrary<> would give early cases tiny seeds), and
  // kept while shrinking: contents are not what makes a case simple.
  k.data_seed = *rc::Gen<uint64_t>([](const rc::Random& r, int) {
    return rc::shrinkable::just(rc::Random(r).next());
  });
  pick_value_forms(k, c);
  return k;
}

bool sizes_are_valid(const Case& c) {
  for (const auto& a : c.args)
    if (const auto* t = std::get_if<TensorCase>(&a))
      for (int64_t d : t->sizes)
        if (d < 0) return false;
  return true;
}

bool constraints_hold(const CaseFacts& facts, const Contract& contract) {
  const EvalInput in = facts.input();
  for (const auto& e : contract.constraints)
    if (!e.expr.eval(in)) return false;
  return true;
}

// Whether a drawn case stays within the contract's `budget:` (what one drawn case may cost).
bool within_budget(const Case& k, const Contract& contract) {
  if (contract.budget.empty()) return true;
  const CaseFacts facts(k, contract);
  const EvalInput in = facts.input();
  return std::all_of(contract.budget.begin(), contract.budget.end(),
                     [&](const NamedExpr& e) { return e.expr.eval(in) != 0; });
}

}  // namespace

std::vector<int> broken_requires(const CaseFacts& facts, const Contract& contract) {
  const EvalInput in = facts.input();
  std::vector<int> broken;
  for (size_t i = 0; i < contract.requires_.size(); ++i)
    if (!contract.requires_[i].expr.eval(in)) broken.push_back(static_cast<int>(i));
  return broken;
}

bool case_is_valid(const Case& c, const Contract& contract) {
  if (!sizes_are_valid(c)) return false;
  const CaseFacts facts(c, contract);
  return constraints_hold(facts, contract) && broken_requires(facts, contract).empty();
}



std::string case_misfit(const Case& c, const Contract& contract) {
  if (c.values.size() != contract.values.size() || c.args.size() != contract.args.size())
    return "it has other values or arguments than the contract";
  for (const auto& a : contract.args) {
    const bool tensor = std::holds_alternative<TensorCase>(c.args[a.index]);
    if (tensor != a.is_tensor) return "argument '" + a.name + "' is of the wrong kind";
    if (!tensor) {
      if (a.from_dims && std::get<ScalarValue>(c.args[a.index]) != scalar_from_dims(a, c.values))
        return "argument '" + a.name + "' is not what the dims give (" + a.from_dims->text() + ")";
      if (!a.from_state.empty() && std::get<ScalarValue>(c.args[a.index]) != ScalarValue(a.from_state))
        return "argument '" + a.name + "' is not the python_state hook's '" + a.from_state + "'";
      continue;
    }
    const TensorCase& t = std::get<TensorCase>(c.args[a.index]);
    if (t.none) {
      if (!a.optional) return "argument '" + a.name + "' is None but not optional";
      continue;
    }
    if (a.always_none) return "argument '" + a.name + "' is a tensor, and the contract always passes None";
    const std::vector<int64_t> want = shape_of(a, c.values);
    if (t.sizes != want)
      return "argument '" + a.name + "' has shape " + shape_text(t.sizes) + " where the dims give " +
             shape_text(want);
    if (!layout_applies(t.layout, t.sizes.size()) && t.layout != Layout::Contiguous)
      return "argument '" + a.name + "' has a layout its rank does not allow";
    if (t.slack < 0 || t.slack > 64) return "argument '" + a.name + "' has a slack outside [0, 64]";
    if (t.layout == Layout::View) {
      if (!a.view) return "argument '" + a.name + "' is a view, and the contract gives it no view:";
      std::vector<int64_t> sizes;
      try {
        if (carve(a, contract, c.values, sizes) != t.carved || sizes != t.sizes)
          return "argument '" + a.name + "' does not lie where its view: puts it";
      } catch (const ContractError& e) {
        return e.message();
      }
    }
    if (const auto forms = edge_forms(a, t.dtype);
        t.form != ValueForm::Drawn && std::find(forms.begin(), forms.end(), t.form) == forms.end())
      return "argument '" + a.name + "' has values (" + to_string(t.form) + ") that its dtype and values: do not allow";
    if (a.dtype_from >= 0) {
      const auto* src = std::get_if<TensorCase>(&c.args[a.dtype_from]);
      if (src && !src->none && src->dtype != t.dtype)
        return "argument '" + a.name + "' does not have the dtype of '" + contract.args[a.dtype_from].name + "'";
    }
  }
  if (c.inplace >= static_cast<int>(contract.inplace.size()))
    return "it names an in-place use the contract does not list";
  if (c.inplace >= 0 && !inplace_fits(c, contract, c.inplace))
    return "it is called in place (" + contract.inplace_text(c.inplace) + ") but the two differ in dtype, shape or layout";
  if (!sizes_are_valid(c)) return "the dims give a negative size";
  try {
    check_case_size(c, contract);
  } catch (const ContractError& e) {
    return e.message();
  }
  if (!constraints_hold(CaseFacts(c, contract), contract)) return "it breaks the contract's constraints";
  return "";
}

Case with_value(const Case& c, const Contract& contract, int slot, int64_t value) {
  Case k = c;
  k.values[slot] = value;
  for (const auto& a : contract.args) {
    if (a.from_dims) k.args[a.index] = scalar_from_dims(a, k.values);
    auto* t = std::get_if<TensorCase>(&k.args[a.index]);
    if (!t || t->none) continue;
    t->sizes = shape_of(a, k.values);
  }
  carve_views(k, contract);
  if (k.inplace >= 0 && !inplace_fits(k, contract, k.inplace)) k.inplace = -1;
  check_case_size(k, contract);
  return k;
}

namespace {

// Draws that meet `meets` and cost what one case may: RapidCheck's suchThat, the storage
// cap and the contract's `budget:` added. A draw too large is drawn again (large values
// come only beside small ones); only a contract that allows nothing smaller is an error of
// the contract, told at the argument that overflows a case.
rc::Gen<Case> drawn_where(std::shared_ptr<const Contract> contract, std::function<bool(const Case&)> meets) {
  const rc::Gen<Case> drawn = rc::gen::exec([contract] { return pick_case(*contract); });
  const auto fits = [contract, meets](const Case& k) {
    if (!meets(k) || !within_budget(k, *contract)) return false;
    try {
      check_case_size(k, *contract);
      return true;
    } catch (const ContractError&) {
      return false;
    }
  };
  return rc::Gen<Case>([drawn, fits, meets, contract](const rc::Random& random, int size) {
    rc::Random r = random;
    std::optional<ContractError> too_large;
    for (int tries = 0; tries < 100; ++tries, ++size) {
      rc::Shrinkable<Case> s = drawn(r.split(), size);
      if (auto kept = rc::shrinkable::filter(s, fits)) return *kept;
      if (!too_large && meets(s.value())) {
        try {
          check_case_size(s.value(), *contract);
        } catch (const ContractError& e) {
          too_large = e;
        }
      }
    }
    if (too_large) throw *too_large;
    throw rc::GenerationFailure("no draw met the contract's constraints, requires and budget in 100 tries");
  });
}

}  // namespace

rc::Gen<Case> case_gen(std::shared_ptr<const Contract> contract) {
  return drawn_where(contract, [contract](const Case& k) { return case_is_valid(k, *contract); });
}

rc::Gen<Case> violating_case_gen(std::shared_ptr<const Contract> contract) {
  return drawn_where(contract, [contract](const Case& k) {
    if (!sizes_are_valid(k)) return false;
    const CaseFacts facts(k, *contract);
    return constraints_hold(facts, *contract) && !broken_requires(facts, *contract).empty();
  });
}

}  // namespace opc
