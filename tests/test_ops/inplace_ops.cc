// Ops for the in-place oracle (tests/contracts/inplace*.yaml): out = x + x[0] row-wise.
// add_first_row reads all of x before it writes, so out may be x; add_first_row_rowwise
// writes row 0 before it reads x[0] for the later rows, so it is wrong only in place (and
// right on separate tensors); add_first_row_checked refuses out being x.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

void add_first_row(at::Tensor& out, const at::Tensor& x) {
  if (x.size(0) == 0) return;
  out.copy_(x + x[0]);
}

void add_first_row_rowwise(at::Tensor& out, const at::Tensor& x) {
  for (int64_t i = 0; i < x.size(0); ++i) out[i].copy_(x[i] + x[0]);
}

void add_first_row_checked(at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(!out.is_alias_of(x), "add_first_row_checked: out must not share x's storage");
  add_first_row(out, x);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("add_first_row(Tensor! out, Tensor x) -> ()");
  m.def("add_first_row_rowwise(Tensor! out, Tensor x) -> ()");
  m.def("add_first_row_checked(Tensor! out, Tensor x) -> ()");
}

TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("add_first_row", &add_first_row);
  m.impl("add_first_row_rowwise", &add_first_row_rowwise);
  m.impl("add_first_row_checked", &add_first_row_checked);
}
