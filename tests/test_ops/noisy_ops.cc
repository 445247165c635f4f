// Ops that print while they run, as vLLM's kernels and torch do (TORCH_WARN, printf,
// std::cerr): the run stays quiet, the count of captured lines is printed once, and a
// finding shows what its case printed. `doubled_noisily` holds its contract;
// `aborts_noisily_when_wide` says its last words on stderr, then aborts.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace {

void chatter() {
  std::printf("noisy: printf from the op\n");
  std::cerr << "noisy: std::cerr from the op\n";
  TORCH_WARN("noisy: TORCH_WARN from the op");
}

at::Tensor doubled_noisily(const at::Tensor& x) {
  chatter();
  return x * 2;
}

at::Tensor aborts_noisily_when_wide(const at::Tensor& x) {
  chatter();
  if (x.size(1) >= 3) {
    std::fprintf(stderr, "noisy: last words before abort, cols=%lld\n", static_cast<long long>(x.size(1)));
    std::abort();
  }
  return x * 2;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("doubled_noisily(Tensor x) -> Tensor");
  m.def("aborts_noisily_when_wide(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("doubled_noisily", &doubled_noisily);
  m.impl("aborts_noisily_when_wide", &aborts_noisily_when_wide);
}
