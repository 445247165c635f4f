#include "oracles/compare.h"

#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

#include "generators/case.h"
#include "runners/compiled_runner.h"

namespace opc {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

std::string index_text(const at::Tensor& t, int64_t flat) {
  std::vector<int64_t> idx(t.dim());
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    idx[d] = flat % t.size(d);
    flat /= t.size(d);
  }
  return shape_text(idx);
}

}  // namespace

std::string beyond_tolerance(const at::Tensor& got, const at::Tensor& want, Tolerance tol,
                             const std::string& want_name) {
  if (got.sizes() != want.sizes())
    return "sizes " + shape_text(got.sizes().vec()) + " vs the " + want_name + "'s " + shape_text(want.sizes().vec());
  if (got.numel() == 0) return "";
  const at::Tensor a = got.to(at::kDouble).contiguous().flatten();
  const at::Tensor b = want.to(at::kDouble).contiguous().flatten();
  const at::Tensor nan_a = a.isnan(), nan_b = b.isnan();
  at::Tensor excess = (a - b).abs() - (tol.atol + tol.rtol * b.abs());
  excess = excess.masked_fill(a == b, 0).masked_fill(nan_a & nan_b, 0);  // equal infinities too
  excess = excess.masked_fill(nan_a != nan_b, std::numeric_limits<double>::infinity());
  const int64_t worst = excess.argmax().item<int64_t>();
  if (!(excess[worst].item<double>() > 0)) return "";
  const int64_t bad = (excess > 0).sum().item<int64_t>();
  return std::to_string(bad) + " of " + std::to_string(a.numel()) + " elements; worst at " +
         index_text(got, worst) + ": op " + number(a[worst].item<double>()) + ", " + want_name + " " +
         number(b[worst].item<double>()) + " (atol " + number(tol.atol) + ", rtol " + number(tol.rtol) + " for " +
         dtype_name(got.scalar_type()) + ")";
}

std::string bytes_differ(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() != b.numel() || a.element_size() != b.element_size())
    return std::to_string(a.numel()) + " elements of " + dtype_name(a.scalar_type()) + " against " +
           std::to_string(b.numel()) + " of " + dtype_name(b.scalar_type());
  const std::vector<uint8_t> x = dense_bytes(a), y = dense_bytes(b);
  if (x == y) return "";
  const size_t item = a.element_size();
  const int64_t n = a.numel();
  int64_t differing = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(x.data() + i * item, y.data() + i * item, item) != 0) {
      ++differing;
      if (first < 0) first = i;
    }
  return std::to_string(differing) + " of " + std::to_string(n) + " elements differ, first at " + index_text(a, first);
}

}  // namespace opc
