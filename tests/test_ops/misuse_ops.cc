// Kernels that trust their caller, each with a twin that refuses a caller's mistake: the
// misuse clause (generators/misuse.h) catches the first kind and passes the second.
//
//   copy_rows_trusting  copies x into out through raw pointers, x's element count: an out
//                       smaller than x is written past its end (caught in fenced memory)
//   row_sums_trusting   reads x as dense float32 whatever it is handed: another dtype or a
//                       strided layout gives garbage silently
//   gather_trusting     reads table rows at idx unchecked: an index past the end reads
//                       beyond the table (a fault in fenced memory)
// Their `_checked` twins TORCH_CHECK what they assume.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>

namespace {

void copy_rows_trusting(at::Tensor& out, const at::Tensor& x) {
  std::memcpy(out.data_ptr(), x.data_ptr(), x.numel() * x.element_size());
}

void copy_rows_checked(at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type(), "copy_rows: out must match x");
  TORCH_CHECK(out.is_contiguous() && x.is_contiguous(), "copy_rows: contiguous tensors only");
  copy_rows_trusting(out, x);
}

at::Tensor row_sums_trusting(const at::Tensor& x) {
  const auto* p = static_cast<const float*>(x.data_ptr());
  const int64_t rows = x.size(0), cols = x.size(1);
  at::Tensor out = at::empty({rows}, x.options().dtype(at::kFloat));
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) s += p[r * cols + c];
    out[r] = s;
  }
  return out;
}

at::Tensor row_sums_checked(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "row_sums: a 2-D float32 x");
  return row_sums_trusting(x.contiguous());
}

at::Tensor gather_trusting(const at::Tensor& table, const at::Tensor& idx) {
  const at::Tensor i64 = idx.to(at::kLong).contiguous();
  const int64_t* ix = i64.data_ptr<int64_t>();
  const int64_t cols = table.size(1);
  const at::Tensor dense = table.contiguous();
  const auto* t = static_cast<const float*>(dense.data_ptr());
  at::Tensor out = at::empty({idx.numel(), cols}, table.options());
  for (int64_t r = 0; r < idx.numel(); ++r)
    std::memcpy(out[r].data_ptr(), t + ix[r] * cols, cols * sizeof(float));
  return out;
}

at::Tensor gather_checked(const at::Tensor& table, const at::Tensor& idx) {
  TORCH_CHECK(table.dim() == 2 && table.scalar_type() == at::kFloat && idx.dim() == 1, "gather: shapes");
  TORCH_CHECK(idx.numel() == 0 || (idx.min().item<int64_t>() >= 0 && idx.max().item<int64_t>() < table.size(0)),
              "gather: an index outside the table");
  return gather_trusting(table, idx);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("copy_rows_trusting(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_checked(Tensor! out, Tensor x) -> ()");
  m.def("row_sums_trusting(Tensor x) -> Tensor");
  m.def("row_sums_checked(Tensor x) -> Tensor");
  m.def("gather_trusting(Tensor table, Tensor idx) -> Tensor");
  m.def("gather_checked(Tensor table, Tensor idx) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("copy_rows_trusting", &copy_rows_trusting);
  m.impl("copy_rows_checked", &copy_rows_checked);
  m.impl("row_sums_trusting", &row_sums_trusting);
  m.impl("row_sums_checked", &row_sums_checked);
  m.impl("gather_trusting", &gather_trusting);
  m.impl("gather_checked", &gather_checked);
}
