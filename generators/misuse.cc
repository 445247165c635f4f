#include "generators/misuse.h"

#include <algorithm>
#include <limits>

#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/view_carve.h"
#include "support/names.h"

namespace opc {
namespace {

constexpr Layout kLayouts[] = {Layout::Contiguous, Layout::Narrow,   Layout::Transposed,   Layout::RowStrided,
                               Layout::Misaligned, Layout::Expanded, Layout::InnerStrided, Layout::Permuted};

// The slack a layout is made with when a misuse picks it (pick_tensor draws it otherwise).
int64_t default_slack(Layout l) {
  switch (l) {
    case Layout::Narrow:
      return 2;
    case Layout::RowStrided:
      return 3;
    case Layout::Misaligned:
      return 1;
    default:
      return 0;
  }
}

bool is_integral(c10::ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/false); }

// Dtypes a kernel could plausibly be handed instead of `t`.
std::vector<c10::ScalarType> plausible_dtypes(c10::ScalarType t) {
  using S = c10::ScalarType;
  if (c10::isFloatingType(t)) return {S::Float, S::Half, S::BFloat16, S::Int};
  if (is_integral(t)) return {S::Int, S::Long, S::Float};
  return {};
}

// The largest value of an integer dtype, capped where a kernel would only read garbage.
int64_t huge_for(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Char:
      return std::numeric_limits<int8_t>::max();
    case c10::ScalarType::Byte:
      return std::numeric_limits<uint8_t>::max();
    case c10::ScalarType::Short:
      return std::numeric_limits<int16_t>::max();
    case c10::ScalarType::Int:
      return std::numeric_limits<int32_t>::max();
    default:
      return int64_t{1} << 40;
  }
}

bool fits(int64_t v, c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Char:
      return v >= INT8_MIN && v <= INT8_MAX;
    case c10::ScalarType::Byte:
      return v >= 0 && v <= UINT8_MAX;
    case c10::ScalarType::Short:
      return v >= INT16_MIN && v <= INT16_MAX;
    case c10::ScalarType::Int:
      return v >= INT32_MIN && v <= INT32_MAX;
    default:
      return true;
  }
}

std::optional<int64_t> changed_size(int64_t s, SizeChange change) {
  int64_t to = s;
  switch (change) {
    case SizeChange::MinusOne:
      to = s - 1;
      break;
    case SizeChange::ToZero:
      to = 0;
      break;
    case SizeChange::PlusOne:
      to = s + 1;
      break;
    case SizeChange::Double:
      to = 2 * s;
      break;
  }
  if (to < 0 || to == s) return std::nullopt;
  return to;
}

// The [lo, hi] of an `ints:` tensor on this case.
std::pair<int64_t, int64_t> ints_range(const Case& c, const Contract& contract, const ArgSpec& a) {
  const Case valid = without_misuse(c);  // CaseFacts reads the values where they lie
  const CaseFacts facts(valid, contract);
  return {a.values.lo.eval(facts.input()), a.values.hi.eval(facts.input())};
}

void add_size_variants(const ArgSpec& a, const TensorCase& t, std::vector<Misuse>& out) {
  for (size_t d = 0; d < t.sizes.size(); ++d)
    for (SizeChange ch : {SizeChange::MinusOne, SizeChange::ToZero, SizeChange::PlusOne, SizeChange::Double}) {
      const std::optional<int64_t> to = changed_size(t.sizes[d], ch);
      // Zero from one is one smaller already; doubling one is one larger.
      if (!to || (ch == SizeChange::ToZero && t.sizes[d] == 1) || (ch == SizeChange::Double && t.sizes[d] == 1))
        continue;
      out.push_back({MisuseKind::Size, a.index, static_cast<int>(d), static_cast<int64_t>(ch)});
    }
}

void add_dtype_variants(const ArgSpec& a, const TensorCase& t, std::vector<Misuse>& out) {
  if (a.dtype_from < 0 && a.dtypes.empty()) return;  // any dtype is the contract's
  const std::vector<c10::ScalarType> stated = a.dtype_from >= 0 ? std::vector{t.dtype} : a.dtypes;
  for (c10::ScalarType d : plausible_dtypes(t.dtype))
    if (std::find(stated.begin(), stated.end(), d) == stated.end())
      out.push_back({MisuseKind::Dtype, a.index, -1, static_cast<int64_t>(d)});
}

void add_layout_variants(const ArgSpec& a, const TensorCase& t, const Contract& contract, std::vector<Misuse>& out) {
  const MutateSpec* written = contract.mutate_spec(a.index);
  for (Layout l : kLayouts) {
    if (std::find(a.layouts.begin(), a.layouts.end(), l) != a.layouts.end() || !layout_applies(l, t.sizes.size()))
      continue;
    // An expanded tensor cannot hold an output, or offsets written row by row: its rows
    // share memory.
    if (l == Layout::Expanded && (written || a.values.kind == ValueDist::Kind::Offsets)) continue;
    out.push_back({MisuseKind::Layout, a.index, -1, static_cast<int64_t>(l)});
  }
}

void add_index_variants(const Case& c, const Contract& contract, const ArgSpec& a, const TensorCase& t,
                        std::vector<Misuse>& out) {
  if (a.values.kind != ValueDist::Kind::Ints || !is_integral(t.dtype) || t.sizes.empty()) return;
  const auto [lo, hi] = ints_range(c, contract, a);
  for (int64_t v : {lo - 1, hi + 1, huge_for(t.dtype)})
    if ((v < lo || v > hi) && fits(v, t.dtype)) out.push_back({MisuseKind::Index, a.index, -1, v});
}

// The ints an int scalar is handed instead: one off either way, doubled, zero; none of them
// a value the contract lists for it (its `choose:`) or the one the dims give it. A str
// scalar is handed kUnlistedString. Scalars the state hook supplies are not the caller's.
void add_scalar_variants(const ArgSpec& a, const ScalarValue& v, std::vector<Misuse>& out) {
  if (!a.from_state.empty()) return;
  if (std::holds_alternative<std::string>(v)) {
    out.push_back({MisuseKind::Scalar, a.index, -1, 0});
    return;
  }
  const auto* i = std::get_if<int64_t>(&v);
  if (!i) return;
  for (int64_t to : {*i - 1, *i + 1, 2 * *i, int64_t{0}}) {
    const bool listed = std::find(a.choices.begin(), a.choices.end(), ScalarValue{to}) != a.choices.end();
    if (to != *i && !listed) add_unique(out, Misuse{MisuseKind::Scalar, a.index, -1, to});
  }
}

// How a scalar misuse departs from the contract: the dims it follows, or its choices.
std::string scalar_tie(const ArgSpec& a) {
  if (a.from_dims) return "tied to the dims: " + a.from_dims->text();
  std::vector<std::string> listed;
  for (const ScalarValue& v : a.choices) add_unique(listed, scalar_text(v));
  return "not among its values: " + join(listed);
}

// The other tensor whose dim shares this one's expression (`hidden` in both), or the scalar
// the dims give it (`head_size: hs`), as words: the tie a size misuse breaks. "" when the
// dim is this tensor's alone.
std::string dim_tie(const Contract& contract, const ArgSpec& a, int dim) {
  if (dim < 0 || dim >= static_cast<int>(a.shape.size())) return "";
  const std::string expr = a.shape[dim].text();
  for (const ArgSpec& b : contract.args) {
    if (b.index == a.index) continue;
    for (size_t d = 0; b.is_tensor && d < b.shape.size(); ++d)
      if (b.shape[d].text() == expr) return "tied to " + b.name + "'s dim " + std::to_string(d) + " (" + expr + ")";
    if (!b.is_tensor && b.from_dims && b.from_dims->text() == expr) return "tied to " + b.name + " (" + expr + ")";
  }
  return "";
}

// The dtype tie a dtype misuse breaks (`dtype: query`, either way), as words.
std::string dtype_tie(const Contract& contract, const ArgSpec& a) {
  if (a.dtype_from >= 0) return "its dtype tied to " + contract.args[a.dtype_from].name + "'s";
  for (const ArgSpec& b : contract.args)
    if (b.dtype_from == a.index) return b.name + "'s dtype tied to it";
  return "";
}

// `k` with its scalar misuse's value handed (an int scalar the int, a str one
// kUnlistedString); nullopt when the argument holds neither.
std::optional<Case> with_scalar_misuse(Case k) {
  auto* v = std::get_if<ScalarValue>(&k.args[k.misuse.arg]);
  if (v && std::holds_alternative<std::string>(*v)) std::get<std::string>(*v).assign(kUnlistedString);
  else if (v && std::holds_alternative<int64_t>(*v) && std::get<int64_t>(*v) != k.misuse.value) *v = k.misuse.value;
  else return std::nullopt;
  return k;
}

std::string with_tie(const std::string& tie) { return tie.empty() ? "" : "; " + tie; }

std::string sizes_change(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  return shape_text(from) + " -> " + shape_text(to);
}

}  // namespace

std::vector<Misuse> misuse_variants(const Case& c, const Contract& contract) {
  std::vector<Misuse> out;
  for (const ArgSpec& a : contract.args) {
    if (const auto* v = std::get_if<ScalarValue>(&c.args[a.index])) add_scalar_variants(a, *v, out);
    const auto* t = std::get_if<TensorCase>(&c.args[a.index]);
    if (!t || t->none) continue;
    add_size_variants(a, *t, out);
    out.push_back({MisuseKind::Rank, a.index, -1, +1});
    if (t->sizes.size() >= 2) out.push_back({MisuseKind::Rank, a.index, -1, -1});
    add_dtype_variants(a, *t, out);
    add_layout_variants(a, *t, contract, out);
    add_index_variants(c, contract, a, *t, out);
  }
  // Each must apply: the size cap, say, can refuse a doubled dim.
  std::erase_if(out, [&](const Misuse& m) {
    Case k = c;
    k.misuse = m;
    return !apply_misuse(k, contract);
  });
  return out;
}

std::optional<Case> apply_misuse(const Case& c, const Contract& contract) {
  if (!c.misuse) return c;
  const Misuse& m = c.misuse;
  Case k = plain_valid_call(c, contract);
  k.misuse = m;
  if (m.arg < 0 || m.arg >= static_cast<int>(k.args.size())) return std::nullopt;
  if (m.kind == MisuseKind::Scalar) return with_scalar_misuse(std::move(k));
  auto* t = std::get_if<TensorCase>(&k.args[m.arg]);
  if (!t || t->none) return std::nullopt;
  // A view mistaken in its size or dtype no longer fits its buffer: it becomes a tensor of
  // its own, as a caller who built it wrong would hand it.
  if (t->layout == Layout::View && (m.kind == MisuseKind::Size || m.kind == MisuseKind::Dtype))
    t->layout = Layout::Contiguous;
  switch (m.kind) {
    case MisuseKind::None:
      break;
    case MisuseKind::Size: {
      if (m.dim < 0 || m.dim >= static_cast<int>(t->sizes.size())) return std::nullopt;
      const std::optional<int64_t> to = changed_size(t->sizes[m.dim], static_cast<SizeChange>(m.value));
      if (!to) return std::nullopt;
      t->sizes[m.dim] = *to;
      break;
    }
    case MisuseKind::Rank:
      if (m.value > 0) {
        t->sizes.insert(t->sizes.begin(), 1);
      } else {
        if (t->sizes.size() < 2) return std::nullopt;
        t->sizes[1] *= t->sizes[0];
        t->sizes.erase(t->sizes.begin());
      }
      t->layout = Layout::Contiguous;
      t->slack = 0;
      break;
    case MisuseKind::Dtype:
      if (static_cast<c10::ScalarType>(m.value) == t->dtype) return std::nullopt;
      t->dtype = static_cast<c10::ScalarType>(m.value);
      break;
    case MisuseKind::Layout: {
      const Layout l = static_cast<Layout>(m.value);
      if (l == t->layout || !layout_applies(l, t->sizes.size())) return std::nullopt;
      t->layout = l;
      t->slack = default_slack(l);
      break;
    }
    case MisuseKind::Scalar:
      return std::nullopt;  // a tensor argument
    case MisuseKind::Index:
      if (!is_integral(t->dtype) || t->sizes.empty() || !fits(m.value, t->dtype)) return std::nullopt;
      if (std::find(t->sizes.begin(), t->sizes.end(), 0) != t->sizes.end()) return std::nullopt;  // no element
      break;
  }
  int64_t total = 0;
  for (const auto& a : k.args)
    if (const auto* u = std::get_if<TensorCase>(&a); u && !u->none) total += storage_extent(*u);
  if (total > kMaxCaseElements) return std::nullopt;
  return k;
}

Case without_misuse(const Case& c) {
  Case k = c;
  k.misuse = {};
  return k;
}

Case plain_valid_call(const Case& c, const Contract& contract) {
  Case k = without_misuse(c);
  k.inplace = -1;  // separate tensors: a misuse is about one of them
  for (const ArgSpec& a : contract.args) {
    auto* t = std::get_if<TensorCase>(&k.args[a.index]);
    if (!t || t->none) continue;
    const Layout first = a.layouts.front();
    t->layout = layout_applies(first, t->sizes.size()) ? first : Layout::Contiguous;
    t->slack = default_slack(t->layout);
  }
  carve_views(k, contract);
  return k;
}

Case fenced_valid_call(const Case& c, const Contract& contract) {
  Case k = plain_valid_call(c, contract);
  k.fenced = true;
  return k;
}

std::string misuse_text(const Case& c, const Contract& contract) {
  const Misuse& m = c.misuse;
  if (!m || m.arg < 0 || m.arg >= static_cast<int>(contract.args.size())) return "";
  const ArgSpec& a = contract.args[m.arg];
  const std::optional<Case> handed = apply_misuse(c, contract);
  if (m.kind == MisuseKind::Scalar) {
    if (!handed) return a.name + ": a misuse that does not apply to this case";
    return a.name + ": " + scalar_text(std::get<ScalarValue>(handed->args[m.arg])) + " instead of " +
           scalar_text(std::get<ScalarValue>(c.args[m.arg])) + " (" + scalar_tie(a) + ")";
  }
  const auto* t = std::get_if<TensorCase>(&c.args[m.arg]);
  const auto* h = handed ? std::get_if<TensorCase>(&handed->args[m.arg]) : nullptr;
  if (!t || !h) return a.name + ": a misuse that does not apply to this case";
  switch (m.kind) {
    case MisuseKind::None:
    case MisuseKind::Scalar:
      return "";
    case MisuseKind::Size: {
      static const char* const kWords[] = {"one smaller", "zero", "one larger", "doubled"};
      return a.name + ": size of dim " + std::to_string(m.dim) + " " + kWords[m.value] + " (" +
             sizes_change(t->sizes, h->sizes) + with_tie(dim_tie(contract, a, m.dim)) + ")";
    }
    case MisuseKind::Rank:
      return a.name + (m.value > 0 ? ": one dim more, a leading 1 (" : ": one dim less, the first two merged (") +
             sizes_change(t->sizes, h->sizes) + ")";
    case MisuseKind::Dtype: {
      const std::string tie = dtype_tie(contract, a);
      return a.name + ": " + dtype_name(h->dtype) + " instead of " + dtype_name(t->dtype) +
             (tie.empty() ? "" : " (" + tie + ")");
    }
    case MisuseKind::Layout: {
      std::vector<std::string> listed;
      for (Layout l : a.layouts) listed.push_back(to_string(l));
      std::string list;
      for (const auto& l : listed) list += (list.empty() ? "" : ", ") + l;
      return a.name + ": " + to_string(h->layout) + ", a layout the contract does not list (it lists " + list + ")";
    }
    case MisuseKind::Index: {
      const auto [lo, hi] = ints_range(c, contract, a);
      return a.name + ": one element " + std::to_string(m.value) + ", outside [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    }
  }
  return "";
}

const char* size_change_name(SizeChange change) {
  switch (change) {
    case SizeChange::MinusOne:
      return "minus_one";
    case SizeChange::ToZero:
      return "to_zero";
    case SizeChange::PlusOne:
      return "plus_one";
    case SizeChange::Double:
      return "double";
  }
  return "?";
}

std::optional<SizeChange> parse_size_change(const std::string& name) {
  for (SizeChange c : {SizeChange::MinusOne, SizeChange::ToZero, SizeChange::PlusOne, SizeChange::Double})
    if (name == size_change_name(c)) return c;
  return std::nullopt;
}

std::string misuse_misfit(const Case& c, const Contract& contract) {
  const Misuse& m = c.misuse;
  if (!m) return "";
  if (m.arg < 0 || m.arg >= static_cast<int>(contract.args.size()))
    return "its misuse names no argument of the contract";
  if ((m.kind == MisuseKind::Scalar) == contract.args[m.arg].is_tensor)
    return m.kind == MisuseKind::Scalar ? "its scalar misuse names a tensor argument"
                                        : "its misuse names no tensor argument of the contract";
  if (m.kind == MisuseKind::Size && (m.value < 0 || m.value > static_cast<int64_t>(SizeChange::Double)))
    return "its size misuse has an unknown change";
  if (m.kind == MisuseKind::Rank && m.value != 1 && m.value != -1) return "its rank misuse is neither +1 nor -1";
  if (m.kind == MisuseKind::Layout && (m.value < 0 || m.value >= static_cast<int64_t>(std::size(kLayouts))))
    return "its layout misuse names no layout";
  if (m.kind == MisuseKind::Dtype && (m.value < 0 || m.value >= static_cast<int64_t>(c10::ScalarType::NumOptions)))
    return "its dtype misuse names no dtype";
  if (!apply_misuse(c, contract)) return "its misuse does not apply to the case";
  return "";
}

}  // namespace opc
