#include "spec/contract.h"

#include <algorithm>
#include <iterator>

namespace opc {
namespace {

constexpr std::pair<Layout, const char*> kLayouts[] = {
    {Layout::Contiguous, "contiguous"},      {Layout::Narrow, "narrow"},         {Layout::Transposed, "transposed"},
    {Layout::RowStrided, "row_strided"},     {Layout::Misaligned, "misaligned"}, {Layout::Expanded, "expanded"},
    {Layout::InnerStrided, "inner_strided"}, {Layout::Permuted, "permuted"},     {Layout::View, "view"},
};

constexpr std::pair<ViewStep::Kind, const char*> kViewSteps[] = {
    {ViewStep::Kind::Select, "select"}, {ViewStep::Kind::Narrow, "narrow"},       {ViewStep::Kind::Chunk, "chunk"},
    {ViewStep::Kind::View, "view"},     {ViewStep::Kind::Transpose, "transpose"},
};

constexpr std::pair<c10::ScalarType, const char*> kDtypes[] = {
    {c10::ScalarType::Float, "float32"},
    {c10::ScalarType::Half, "float16"},
    {c10::ScalarType::BFloat16, "bfloat16"},
    {c10::ScalarType::Double, "float64"},
    {c10::ScalarType::Float8_e4m3fn, "float8_e4m3fn"},
    {c10::ScalarType::Long, "int64"},
    {c10::ScalarType::Int, "int32"},
    {c10::ScalarType::Short, "int16"},
    {c10::ScalarType::Char, "int8"},
    {c10::ScalarType::Byte, "uint8"},
    {c10::ScalarType::Bool, "bool"},
};

template <class Table>
std::string names_of(const Table& table) {
  std::string out;
  for (const auto& [value, name] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

const char* to_string(Layout layout) {
  for (const auto& [l, name] : kLayouts)
    if (l == layout) return name;
  return "?";
}
std::optional<Layout> parse_layout(const std::string& name) {
  for (const auto& [l, n] : kLayouts)
    if (name == n) return l;
  return std::nullopt;
}
std::string layout_names() { return names_of(kLayouts); }

const char* to_string(ViewStep::Kind kind) {
  for (const auto& [k, name] : kViewSteps)
    if (k == kind) return name;
  return "?";
}
std::optional<ViewStep::Kind> parse_view_step(const std::string& name) {
  for (const auto& [k, n] : kViewSteps)
    if (name == n) return k;
  return std::nullopt;
}
std::string view_step_names() { return names_of(kViewSteps); }

std::optional<c10::ScalarType> parse_dtype(const std::string& name) {
  for (const auto& [t, n] : kDtypes)
    if (name == n) return t;
  return std::nullopt;
}
const char* dtype_name(c10::ScalarType type) {
  for (const auto& [t, n] : kDtypes)
    if (t == type) return n;
  return c10::toString(type);
}
std::string dtype_names() { return names_of(kDtypes); }
std::vector<std::pair<std::string, int64_t>> dtype_constants() {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [t, n] : kDtypes) out.emplace_back(n, static_cast<int64_t>(t));
  return out;
}

namespace {
constexpr MisuseKind kMisuseKinds[] = {MisuseKind::Size,   MisuseKind::Rank,  MisuseKind::Dtype,
                                       MisuseKind::Layout, MisuseKind::Index, MisuseKind::Scalar};
}  // namespace

const char* to_string(MisuseKind kind) {
  switch (kind) {
    case MisuseKind::None:
      return "none";
    case MisuseKind::Size:
      return "size";
    case MisuseKind::Rank:
      return "rank";
    case MisuseKind::Dtype:
      return "dtype";
    case MisuseKind::Layout:
      return "layout";
    case MisuseKind::Index:
      return "index";
    case MisuseKind::Scalar:
      return "scalar";
  }
  return "none";
}

std::optional<MisuseKind> parse_misuse_kind(const std::string& name) {
  for (MisuseKind k : kMisuseKinds)
    if (name == to_string(k)) return k;
  return std::nullopt;
}

std::string misuse_kind_names() {
  std::string s;
  for (size_t i = 0; i < std::size(kMisuseKinds); ++i)
    s += std::string(i == 0 ? "" : i + 1 == std::size(kMisuseKinds) ? " or " : ", ") + to_string(kMisuseKinds[i]);
  return s;
}

std::vector<int64_t> vllm_capture_sizes() {
  std::vector<int64_t> sizes{1, 2, 4};
  for (int64_t s = 8; s <= 248; s += 8) sizes.push_back(s);
  for (int64_t s = 256; s <= 512; s += 16) sizes.push_back(s);
  return sizes;
}

Tolerance default_tolerance(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return {1e-5, 1.3e-6};
    case c10::ScalarType::Double:
      return {1e-7, 1e-7};
    case c10::ScalarType::Half:
      return {1e-5, 1e-3};
    case c10::ScalarType::BFloat16:
      return {1e-5, 1.6e-2};
    case c10::ScalarType::Float8_e4m3fn:
      return {1e-5, 0.125};  // one step of a 3-bit mantissa
    default:
      return {0, 0};
  }
}

Tolerance Contract::tolerance_for(c10::ScalarType dtype) const {
  auto it = tolerance.find(dtype);
  return it == tolerance.end() ? default_tolerance(dtype) : it->second;
}

const ArgSpec* Contract::arg(const std::string& name) const {
  for (const auto& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

std::string Contract::inplace_text(int k) const {
  const InplaceSpec& s = inplace[k];
  return "'" + args[s.into].name + "' is '" + args[s.from].name + "'";
}

bool DonationSpec::donated(int arg_index) const { return std::find(args.begin(), args.end(), arg_index) != args.end(); }

bool Contract::reference_is_python() const { return !reference.empty() && reference.find("::") == std::string::npos; }

const MutateSpec* Contract::mutate_spec(int arg_index) const {
  for (const auto& m : mutates)
    if (m.arg == arg_index) return &m;
  return nullptr;
}

bool asks_for(const Contract& c, Clause clause) {
  switch (clause_info(clause).stated_by) {
    case StatedBy::Always:
      return true;
    case StatedBy::Reference:
      return !c.reference.empty();
    // A requires:, or an in-place use it calls unsupported (the op must refuse it).
    case StatedBy::Requires:
      return !c.requires_.empty() ||
             std::any_of(c.inplace.begin(), c.inplace.end(), [](const InplaceSpec& i) { return !i.supported; });
    case StatedBy::Padding:
      return c.padding.has_value();
    case StatedBy::Donates:
      return c.donates.has_value();
    case StatedBy::Finite:
      return c.finite;
    case StatedBy::Forms:
      return std::any_of(c.args.begin(), c.args.end(), [](const ArgSpec& a) { return !a.forms.empty(); });
    case StatedBy::Deterministic:
      return c.deterministic;
  }
  return true;
}

bool judges(const Contract& c, Mode m, Clause clause, bool eager_runs) {
  if (!clause_info(clause).modes.has(m) || !asks_for(c, clause)) return false;
  return !(clause == Clause::Alias && m == Mode::Fake && eager_runs);
}

}  // namespace opc
