// Ops for structured offsets (tests/contracts/offsets.yaml): out[r] = sum of x over request
// r's tokens, x[cu[r]:cu[r+1]]. segment_sum writes every request's row; segment_sum_skips_empty
// leaves the row of an empty request (cu[r] == cu[r+1]) unwritten: the caller reads stale
// memory there, which only equal adjacent offsets show.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

template <bool kSkipEmpty>
void segment_sum_impl(at::Tensor& out, const at::Tensor& x, const at::Tensor& cu) {
  const at::Tensor offsets = cu.to(at::kLong).contiguous();
  const int64_t* o = offsets.data_ptr<int64_t>();
  for (int64_t r = 0; r + 1 < offsets.numel(); ++r) {
    TORCH_CHECK(0 <= o[r] && o[r] <= o[r + 1] && o[r + 1] <= x.size(0), "segment_sum: bad offsets");
    if (kSkipEmpty && o[r] == o[r + 1]) continue;
    out[r].copy_(x.slice(0, o[r], o[r + 1]).sum());
  }
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("segment_sum(Tensor! out, Tensor x, Tensor cu_num_tokens) -> ()");
  m.def("segment_sum_skips_empty(Tensor! out, Tensor x, Tensor cu_num_tokens) -> ()");
}

TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("segment_sum", &segment_sum_impl<false>);
  m.impl("segment_sum_skips_empty", &segment_sum_impl<true>);
}
