#include "generators/traffic_draft.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "spec/contract.h"
#include "spec/contract_draft.h"
#include "generators/admission.h"
#include "support/names.h"

namespace opc {
namespace {

const Layout kEveryLayout[] = {Layout::Contiguous, Layout::RowStrided, Layout::Transposed, Layout::Narrow,
                               Layout::Expanded,   Layout::InnerStrided, Layout::Permuted, Layout::Misaligned};

// One size of one tensor argument: argument index and axis.
struct Axis {
  size_t arg, dim;
};

// The calls' tensors, per argument: none where the call passed something else.
const RecordedTensor* tensor_of(const RecordedCall& c, size_t arg) {
  return arg < c.args.size() && c.args[arg].tensor ? &*c.args[arg].tensor : nullptr;
}

// A dim: the axes that have had the same size in every call, and the sizes seen.
struct Dim {
  std::string name;
  std::vector<Axis> axes;
  std::vector<int64_t> sizes;  // per call; -1 where the call passed no tensor there
};

std::vector<Dim> dims_of(const std::vector<RecordedCall>& calls, const c10::FunctionSchema& schema) {
  std::vector<Dim> dims;
  for (size_t arg = 0; arg < schema.arguments().size(); ++arg) {
    size_t rank = 0;
    for (const RecordedCall& c : calls)
      if (const RecordedTensor* t = tensor_of(c, arg)) rank = std::max(rank, t->sizes.size());
    for (size_t dim = 0; dim < rank; ++dim) {
      std::vector<int64_t> sizes;
      for (const RecordedCall& c : calls) {
        const RecordedTensor* t = tensor_of(c, arg);
        sizes.push_back(t && dim < t->sizes.size() ? t->sizes[dim] : -1);
      }
      auto same = std::find_if(dims.begin(), dims.end(), [&](const Dim& d) {
        for (size_t i = 0; i < sizes.size(); ++i)
          if (sizes[i] >= 0 && d.sizes[i] >= 0 && sizes[i] != d.sizes[i]) return false;
        return true;
      });
      if (same == dims.end()) {
        dims.push_back({schema.arguments()[arg].name() + "_" + std::to_string(dim), {{arg, dim}}, sizes});
      } else {
        same->axes.push_back({arg, dim});
        for (size_t i = 0; i < sizes.size(); ++i)
          if (same->sizes[i] < 0) same->sizes[i] = sizes[i];
      }
    }
  }
  return dims;
}

std::string dim_line(const Dim& d) {
  std::set<int64_t> seen;
  for (int64_t s : d.sizes)
    if (s >= 0) seen.insert(s);
  if (seen.empty()) return "";
  std::ostringstream y;
  y << "  " << d.name << ": ";
  if (seen.size() == 1) return y.str() + "{choose: [" + std::to_string(*seen.begin()) + "]}\n";
  y << "{range: [" << *seen.begin() << ", " << *seen.rbegin() << "], favor: [";
  int n = 0;
  for (auto it = seen.begin(); it != seen.end() && n < 8; ++it, ++n) y << (n ? ", " : "") << *it;
  y << "]}\n";
  return y.str();
}

std::string dim_name_of(const std::vector<Dim>& dims, size_t arg, size_t dim) {
  for (const Dim& d : dims)
    for (const Axis& a : d.axes)
      if (a.arg == arg && a.dim == dim) return d.name;
  return "TODO";
}

// The argument whose dtype this one always had, or -1.
int same_dtype_as(const std::vector<RecordedCall>& calls, size_t arg) {
  for (size_t other = 0; other < arg; ++other) {
    bool always = true, any = false;
    for (const RecordedCall& c : calls) {
      const RecordedTensor *a = tensor_of(c, arg), *b = tensor_of(c, other);
      if (!a) continue;
      if (!b || a->dtype != b->dtype) always = false;
      any = true;
    }
    if (always && any) return static_cast<int>(other);
  }
  return -1;
}

std::string tensor_line(const std::vector<RecordedCall>& calls, const c10::FunctionSchema& schema,
                        const std::vector<Dim>& dims, size_t arg) {
  std::vector<std::string> dtypes, layouts, unlaid;
  std::optional<int64_t> lo, hi;
  size_t rank = 0;
  bool none = false, any = false;
  for (const RecordedCall& c : calls) {
    const RecordedTensor* t = tensor_of(c, arg);
    if (!t) {
      none = true;
      continue;
    }
    any = true;
    rank = std::max(rank, t->sizes.size());
    if (std::find(dtypes.begin(), dtypes.end(), t->dtype) == dtypes.end()) dtypes.push_back(t->dtype);
    if (const auto l = layout_matching(*t, {std::begin(kEveryLayout), std::end(kEveryLayout)})) {
      if (std::find(layouts.begin(), layouts.end(), to_string(*l)) == layouts.end()) layouts.push_back(to_string(*l));
    } else if (const std::string u = recorded_tensor_text(*t);
               unlaid.size() < 3 && std::find(unlaid.begin(), unlaid.end(), u) == unlaid.end()) {
      unlaid.push_back(u);
    }
    if (t->min) lo = lo ? std::min(*lo, *t->min) : *t->min;
    if (t->max) hi = hi ? std::max(*hi, *t->max) : *t->max;
  }
  const std::string name = schema.arguments()[arg].name();
  if (!any) return "  " + name + ": none  # only None was recorded\n";
  std::ostringstream y;
  const int tied = same_dtype_as(calls, arg);
  y << "  " << name << ": {dtype: "
    << (tied >= 0 ? schema.arguments()[tied].name() : "[" + join(dtypes) + "]") << ", shape: [";
  for (size_t d = 0; d < rank; ++d) y << (d ? ", " : "") << dim_name_of(dims, arg, d);
  y << "], layouts: [" << (layouts.empty() ? "contiguous" : join(layouts)) << "]";
  const bool integer = std::all_of(dtypes.begin(), dtypes.end(), [](const std::string& d) {
    return d.rfind("int", 0) == 0 || d.rfind("uint", 0) == 0;
  });
  if (lo && hi && integer) y << ", values: {ints: [" << *lo << ", " << *hi << "]}";
  if (none) y << ", optional: true";
  y << "}\n";
  for (const std::string& u : unlaid)
    y << "  # " << name << " was also recorded as " << u << ": no layout lays that out (a view of a larger buffer)\n";
  return y.str();
}

std::string scalar_line(const std::vector<RecordedCall>& calls, const c10::Argument& a, size_t arg) {
  std::vector<std::string> values;
  bool objects = false;
  for (const RecordedCall& c : calls) {
    if (arg >= c.args.size()) continue;
    const RecordedArg& r = c.args[arg];
    if (r.kind == RecordedArg::Kind::Object) objects = true;
    if (r.kind != RecordedArg::Kind::Value) continue;
    std::string v = r.is_string ? "\"" + r.value + "\"" : r.value;
    // A float argument passed a whole number: written as a float, as the contract's type is.
    if (a.type()->kind() == c10::TypeKind::FloatType && v.find_first_of(".eEn") == std::string::npos) v += ".0";
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (objects) return "  " + a.name() + ": TODO  # objects were passed: a {state: NAME} of a python_state hook\n";
  if (std::any_of(values.begin(), values.end(), [](const std::string& v) { return v[0] == '['; }))
    return "  " + a.name() + ": TODO  # lists were passed: " + join(values) + "\n";
  if (values.empty()) return "  # " + a.name() + ": left out, the schema's default was passed\n";
  return "  " + a.name() + ": {choose: [" + join(values) + "]}\n";
}

}  // namespace

std::string draft_from_traffic(const std::string& qualname, const c10::FunctionSchema& schema,
                               const std::vector<RecordedCall>& all) {
  std::vector<RecordedCall> calls;
  int64_t count = 0;
  for (const RecordedCall& c : all)
    if (c.op == qualname && c.args.size() == schema.arguments().size()) {
      calls.push_back(c);
      count += c.calls;
    }
  std::ostringstream y;
  y << "# Draft contract for " << qualname << ", written by `opcontract draft --traffic` from " << count
    << " recorded call(s)\n# (" << calls.size()
    << " signatures): dims, dtypes, layouts and scalars are what the program passed. State\n"
       "# what the op allows beyond them, the requires it checks, its branches, and which region\n"
       "# each mutable argument writes (docs/format.md); `opcontract admit` shows which calls\n"
       "# the result admits.\n";
  y << "op: " << qualname << "\n" << draft_schema_line(schema);
  const std::vector<Dim> dims = dims_of(calls, schema);
  std::string dim_lines;
  for (const Dim& d : dims) dim_lines += dim_line(d);
  if (!dim_lines.empty()) y << "dims:\n" << dim_lines;
  y << "args:\n";
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    const bool tensor = a.type()->kind() == c10::TypeKind::TensorType ||
                        (a.type()->cast<c10::OptionalType>() &&
                         a.type()->cast<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::TensorType);
    y << (tensor ? tensor_line(calls, schema, dims, i) : scalar_line(calls, a, i));
  }
  y << draft_tail(schema);
  return y.str();
}

}  // namespace opc
