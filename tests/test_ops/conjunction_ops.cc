// Ops for targeted search (tests/contracts/conjunction.yaml): out = x + y over [n, c].
// add_rows_vec4_overrun has a fast path taken only when three conditions meet -- n a
// multiple of 4, x's rows strided at a multiple of 4 elements, y broadcast (stride(0) ==
// 0) -- and that path writes one element past out's end: rare for plain generation
// (about one case in a thousand), the conjunction a contract's branch names.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

void add_rows_vec4(at::Tensor& out, const at::Tensor& x, const at::Tensor& y) { out.copy_(x + y); }

void add_rows_vec4_overrun(at::Tensor& out, const at::Tensor& x, const at::Tensor& y) {
  out.copy_(x + y);
  const int64_t n = x.size(0), c = x.size(1);
  const bool fast = n % 4 == 0 && x.stride(1) == 1 && x.stride(0) != c && x.stride(0) % 4 == 0 &&
                    y.stride(0) == 0;
  if (fast && out.is_contiguous()) out.data_ptr<float>()[n * c] = 0;  // one past the end
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("add_rows_vec4(Tensor! out, Tensor x, Tensor y) -> ()");
  m.def("add_rows_vec4_overrun(Tensor! out, Tensor x, Tensor y) -> ()");
}

TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("add_rows_vec4", &add_rows_vec4);
  m.impl("add_rows_vec4_overrun", &add_rows_vec4_overrun);
}
