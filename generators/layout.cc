#include "generators/layout.h"

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
  const Layout layout = layout_applies(t.layout, rank) ? t.layout : Layout::Contiguous;
  switch (layout) {
    case Layout::Contiguous:
      g.strides = dense_strides(t.sizes);
      g.storage_elems = product(t.sizes);
      break;
    case Layout::Narrow: {
      // `slack` spare rows on each side of the view, as x.narrow(0, slack, n) of a base
      // with n + 2 * slack rows.
      std::vector<int64_t> base = t.sizes;
      base[0] += 2 * t.slack;
      g.strides = dense_strides(base);
      g.offset = t.slack * g.strides[0];
      g.storage_elems = product(base);
      break;
    }
    case Layout::Transposed: {
      // A dense tensor with the last two dims swapped, viewed back: x.t() of a contiguous x.
      std::vector<int64_t> base = t.sizes;
      std::swap(base[rank - 1], base[rank - 2]);
      g.strides = dense_strides(base);
      std::swap(g.strides[rank - 1], g.strides[rank - 2]);
      g.storage_elems = product(base);
      break;
    }
    case Layout::RowStrided: {
      // Rows `slack` elements wider than the view: x[..., :n] of a wider x.
      std::vector<int64_t> base = t.sizes;
      base[rank - 1] += t.slack;
      g.strides = dense_strides(base);
      g.storage_elems = product(base);
      break;
    }
  }
  g.contiguous = is_contiguous(g.sizes, g.strides);
  return g;
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
