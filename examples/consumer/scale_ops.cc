// The example's own op library: scale(x, alpha) = x * alpha, fresh, with a Meta kernel;
// and a historical bug of it that scaled x in place, the regression its contract lists.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor scale(const at::Tensor& x, double alpha) { return x * alpha; }
at::Tensor scale_in_place(const at::Tensor& x, double alpha) {
  at::Tensor written = x;
  return written.mul_(alpha).clone();
}

}  // namespace

TORCH_LIBRARY(example_ops, m) {
  m.def("scale(Tensor x, float alpha) -> Tensor");
  m.def("scale_in_place(Tensor x, float alpha) -> Tensor");
}
TORCH_LIBRARY_IMPL(example_ops, CPU, m) {
  m.impl("scale", &scale);
  m.impl("scale_in_place", &scale_in_place);
}
TORCH_LIBRARY_IMPL(example_ops, Meta, m) {
  m.impl("scale", &scale);
  m.impl("scale_in_place", &scale);
}
