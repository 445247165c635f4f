// The cudagraph mode: the op captured in CUDA graphs and replayed, as vLLM's
// CUDAGraphWrapper runs it.
//
// For a case of n rows (the contract's `cudagraph.batch_dim`), the op is captured at the
// smallest capture size B >= n and at the next one, largest first, both graphs in one
// memory pool (`shared_pool`). Static inputs are allocated once at capture size; before
// each replay they get new data in rows < n and garbage (NaN, large values) in rows
// n..B. The graphs are replayed out of order (small, large, small) and each replay's
// real rows are compared, right after it, with the op run eagerly on the GPU on n rows
// of the same data. Without a batch dim each case is captured at its own sizes and
// replayed twice with new data.
//
//   if (std::string why = cudagraph_unavailable(); !why.empty()) ... not run: why
//   CudagraphObservation obs = run_cudagraph(op, contract, c);
//
// Built in only against a CUDA LibTorch; elsewhere cudagraph_unavailable() says so.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "generators/case.h"
#include "runners/op_binding.h"

namespace opc {

// One compared result: a return or a mutable argument, its real rows, on the CPU.
struct GraphOutput {
  std::string what;  // "return 0", "argument 'out'"
  at::Tensor eager, replayed;
};

struct GraphReplay {
  int64_t capture_size = -1;  // B; -1 when the case was captured at its own sizes
  std::string error;          // capture or replay failure: CUDA's or PyTorch's text
  std::vector<GraphOutput> outputs;
  std::vector<std::string> inputs_written;  // non-mutable static inputs the replay changed
};

struct CudagraphObservation {
  int64_t real_rows = -1;    // n; -1 without a batch dim
  std::string eager_error;   // the op threw when run eagerly on the GPU
  std::string not_captured;  // why this case ran in no graph (n above every capture size)
  std::vector<GraphReplay> replays;  // in replay order
};

// "" when this build and machine can run the mode; otherwise why not.
std::string cudagraph_unavailable();

CudagraphObservation run_cudagraph(const OpBinding& op, const Contract& contract, const Case& c);

}  // namespace opc
