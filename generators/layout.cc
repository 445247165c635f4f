#include "generators/layout.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace opc {
namespace {

std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i] > 0 ? sizes[i] : 1;
  }
  return strides;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

Layout effective_layout(const TensorCase& t) {
  return layout_applies(t.layout, t.sizes.size()) ? t.layout : Layout::Contiguous;
}

// The dense base tensor a layout carves the view from: narrow has `slack` spare rows on
// each side (x.narrow(0, slack, n) of n + 2 * slack rows), row_strided rows `slack`
// elements wider (x[..., :n] of a wider x), transposed the last two dims swapped.
std::vector<int64_t> base_sizes(const TensorCase& t, Layout layout) {
  std::vector<int64_t> base = t.sizes;
  const size_t rank = base.size();
  // Saturates, so that storage_extent can measure a hostile case before refusing it.
  auto grow = [](int64_t& d, int64_t by) {
    if (__builtin_add_overflow(d, by, &d)) d = INT64_MAX;
  };
  switch (layout) {
    case Layout::Contiguous: break;
    case Layout::Narrow: grow(base[0], 2 * t.slack); break;
    case Layout::Transposed: std::swap(base[rank - 1], base[rank - 2]); break;
    case Layout::RowStrided: grow(base[rank - 1], t.slack); break;
    case Layout::Misaligned: break;  // the same base, entered `slack` elements late
    case Layout::Expanded: base[0] = std::min<int64_t>(base[0], 1); break;
    case Layout::InnerStrided:
      if (__builtin_mul_overflow(base[rank - 1], 2, &base[rank - 1])) base[rank - 1] = INT64_MAX;
      break;
    case Layout::Permuted: std::swap(base[0], base[1]); break;
    case Layout::View: break;  // carved from its buffer (geometry_of)
  }
  return base;
}

}  // namespace

bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool layout_applies(Layout layout, size_t rank) {
  switch (layout) {
    case Layout::Contiguous: return true;
    case Layout::Narrow: return rank >= 1;
    case Layout::Transposed:
    case Layout::RowStrided: return rank >= 2;
    case Layout::Misaligned:
    case Layout::Expanded:
    case Layout::InnerStrided: return rank >= 1;
    case Layout::Permuted: return rank >= 3;
    case Layout::View: return true;
  }
  return false;
}

Geometry geometry_of(const TensorCase& t) {
  Geometry g;
  g.sizes = t.sizes;
  if (t.layout == Layout::View) {
    g.strides = t.carved.strides;
    g.offset = t.carved.offset;
    g.storage_elems = t.carved.base_elems;
    g.contiguous = is_contiguous(g.sizes, g.strides);
    return g;
  }
  const size_t rank = t.sizes.size();
  const Layout layout = effective_layout(t);
  const std::vector<int64_t> base = base_sizes(t, layout);
  g.strides = dense_strides(base);
  g.storage_elems = product(base);
  // Narrow: the view starts `slack` rows into its base. Transposed: the base is dense with
  // the last two dims swapped, viewed back (x.t() of a contiguous x).
  if (layout == Layout::Narrow) g.offset = t.slack * g.strides[0];
  if (layout == Layout::Transposed) std::swap(g.strides[rank - 1], g.strides[rank - 2]);
  if (layout == Layout::Misaligned) {
    g.offset = t.slack;
    g.storage_elems += t.slack;
  }
  if (layout == Layout::Expanded) g.strides[0] = 0;
  if (layout == Layout::InnerStrided) g.strides[rank - 1] = 2;
  if (layout == Layout::Permuted) std::swap(g.strides[0], g.strides[1]);
  g.contiguous = is_contiguous(g.sizes, g.strides);
  return g;
}

int64_t storage_extent(const TensorCase& t) {
  if (t.layout == Layout::View) return t.carved.base_elems;
  const Layout layout = effective_layout(t);
  int64_t n = 1;
  for (int64_t d : base_sizes(t, layout))
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n)) return INT64_MAX;
  if (layout == Layout::Misaligned && __builtin_add_overflow(n, t.slack, &n)) return INT64_MAX;
  return n;
}

}  // namespace opc

namespace opc {

CaseFacts::CaseFacts(const Case& c, const Contract& contract) : values_(c.values.data()) {
  geometry_.resize(contract.args.size());
  for (size_t i = 0; i < contract.args.size(); ++i)
    if (const auto* t = std::get_if<TensorCase>(&c.args[i]); t && !t->none)
      geometry_[i] = geometry_of(*t);
  facts_.reserve(contract.tensor_of_scope.size());
  for (int arg : contract.tensor_of_scope) {
    const Geometry& g = geometry_[arg];
    const auto& t = std::get<TensorCase>(c.args[arg]);
    TensorFacts f{g.sizes.data(), g.strides.data(), static_cast<int64_t>(g.sizes.size()), g.contiguous};
    f.none = t.none;
    if (!t.none) {
      f.storage_offset = kGuardElems + g.offset;
      f.element_size = static_cast<int64_t>(c10::elementSize(t.dtype));
      f.dtype = static_cast<int64_t>(t.dtype);
      // The largest power of two dividing the data pointer's byte offset, up to the
      // storage's own alignment.
      const int64_t bytes = f.storage_offset * f.element_size;
      f.alignment = bytes == 0 ? kStorageAlignment : std::min(kStorageAlignment, bytes & -bytes);
    }
    facts_.push_back(f);
  }
}

}  // namespace opc
