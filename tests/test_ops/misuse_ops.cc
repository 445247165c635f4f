// Kernels that trust their caller, each with a twin that refuses a caller's mistake: the
// misuse clause (generators/misuse.h) catches the first kind and passes the second.
//
//   copy_rows_trusting  copies x into out through raw pointers, x's element count: an out
//                       smaller than x is written past its end (caught in fenced memory)
//   row_sums_trusting   reads x as dense float32 whatever it is handed: another dtype or a
//                       strided layout gives garbage silently
//   gather_trusting     reads table rows at idx unchecked: an index past the end reads
//                       beyond the table (a fault in fenced memory)
//   scale_rows_trusting scales each row of x by w, read through a raw pointer as float32 of
//                       x's row length: a w untied from x (shorter, or of a narrower dtype)
//                       is read past its end; x and w's layouts it handles
//   copy_width_trusting copies `width` elements a row, trusting the scalar to be x's row
//                       length: a width untied from the dims reads past x's end
// Their `_checked` twins TORCH_CHECK what they assume.
//
//   copy_rows_overreading  copy_rows_checked but for the sizes, of which it checks only that
//                       out holds x, and a prefetch of x's next 64-byte block, past x's end on
//                       every valid call: harmless where PyTorch's allocator leaves room, a
//                       fault where x ends at a page. Every size mistake it accepts faults,
//                       but the fault is the valid call's (check/case_worker.h tells them
//                       apart).
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

void copy_rows_overreading(at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(out.scalar_type() == at::kFloat && x.scalar_type() == at::kFloat, "copy_rows: float32 only");
  TORCH_CHECK(out.is_contiguous() && x.is_contiguous(), "copy_rows: contiguous tensors only");
  TORCH_CHECK(out.numel() >= x.numel(), "copy_rows: out too small for x");
  const int64_t n = x.numel();
  if (n == 0) return;
  const auto* p = static_cast<const float*>(x.data_ptr());
  const volatile float prefetched = p[(n + 15) / 16 * 16];  // the block after x's last
  static_cast<void>(prefetched);
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
  for (int64_t r = 0; r < idx.numel(); ++r) std::memcpy(out[r].data_ptr(), t + ix[r] * cols, cols * sizeof(float));
  return out;
}

at::Tensor gather_checked(const at::Tensor& table, const at::Tensor& idx) {
  TORCH_CHECK(table.dim() == 2 && table.scalar_type() == at::kFloat && idx.dim() == 1, "gather: shapes");
  TORCH_CHECK(idx.numel() == 0 || (idx.min().item<int64_t>() >= 0 && idx.max().item<int64_t>() < table.size(0)),
              "gather: an index outside the table");
  return gather_trusting(table, idx);
}

at::Tensor scale_rows_trusting(const at::Tensor& x, const at::Tensor& w) {
  const at::Tensor wc = w.contiguous();
  const auto* wp = static_cast<const float*>(wc.data_ptr());
  const int64_t cols = x.size(-1);
  at::Tensor out = x.to(at::kFloat).contiguous().clone();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] *= wp[i % cols];
  return out.to(x.scalar_type());
}

at::Tensor scale_rows_checked(const at::Tensor& x, const at::Tensor& w) {
  TORCH_CHECK(w.dim() == 1 && w.size(0) == x.size(-1), "scale_rows: w must hold one weight per column of x");
  TORCH_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat, "scale_rows: float32 x and w");
  return scale_rows_trusting(x, w);
}

at::Tensor copy_width_trusting(const at::Tensor& x, int64_t width) {
  const at::Tensor dense = x.contiguous();
  at::Tensor out = at::empty({x.size(0), width}, x.options());
  std::memcpy(out.data_ptr(), dense.data_ptr(), x.size(0) * width * x.element_size());
  return out;
}

at::Tensor copy_width_checked(const at::Tensor& x, int64_t width) {
  TORCH_CHECK(x.dim() == 2 && width == x.size(1), "copy_width: width must be x's row length");
  return copy_width_trusting(x, width);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("scale_rows_trusting(Tensor x, Tensor w) -> Tensor");
  m.def("scale_rows_checked(Tensor x, Tensor w) -> Tensor");
  m.def("copy_width_trusting(Tensor x, int width) -> Tensor");
  m.def("copy_width_checked(Tensor x, int width) -> Tensor");
  m.def("copy_rows_trusting(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_checked(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_overreading(Tensor! out, Tensor x) -> ()");
  m.def("row_sums_trusting(Tensor x) -> Tensor");
  m.def("row_sums_checked(Tensor x) -> Tensor");
  m.def("gather_trusting(Tensor table, Tensor idx) -> Tensor");
  m.def("gather_checked(Tensor table, Tensor idx) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("scale_rows_trusting", &scale_rows_trusting);
  m.impl("scale_rows_checked", &scale_rows_checked);
  m.impl("copy_width_trusting", &copy_width_trusting);
  m.impl("copy_width_checked", &copy_width_checked);
  m.impl("copy_rows_trusting", &copy_rows_trusting);
  m.impl("copy_rows_checked", &copy_rows_checked);
  m.impl("copy_rows_overreading", &copy_rows_overreading);
  m.impl("row_sums_trusting", &row_sums_trusting);
  m.impl("row_sums_checked", &row_sums_checked);
  m.impl("gather_trusting", &gather_trusting);
  m.impl("gather_checked", &gather_checked);
}
