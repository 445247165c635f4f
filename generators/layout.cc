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
  }
  return base;
}

}  // namespace

bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
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
  }
  return false;
}

Geometry geometry_of(const TensorCase& t) {
  Geometry g;
  g.sizes = t.sizes;
  const size_t rank = t.sizes.size();
  const Layout layout = effective_layout(t);
  const std::vector<int64_t> base = base_sizes(t, layout);
  g.strides = dense_strides(base);
  g.storage_elems = product(base);
  // Narrow: the view starts `slack` rows into its base. Transposed: the base is dense with
  // the last two dims swapped, viewed back (x.t() of a contiguous x).
  if (layout == Layout::Narrow) g.offset = t.slack * g.strides[0];
  if (layout == Layout::Transposed) std::swap(g.strides[rank - 1], g.strides[rank - 2]);
  g.contiguous = is_contiguous(g.sizes, g.strides);
  return g;
}

int64_t storage_extent(const TensorCase& t) {
  int64_t n = 1;
  for (int64_t d : base_sizes(t, effective_layout(t)))
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n)) return INT64_MAX;
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
    facts_.push_back({g.sizes.data(), g.strides.data(), static_cast<int64_t>(g.sizes.size()),
                      g.contiguous});
  }
}

}  // namespace opc
