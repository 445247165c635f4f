// The cudagraph mode in a build against a CPU-only LibTorch: never runs, and says why.
#include <stdexcept>

#include "runners/cudagraph_runner.h"

namespace opc {

std::string cudagraph_unavailable() {
  return "this opcontract was built against a CPU-only LibTorch; build it against a CUDA "
         "LibTorch (-DTorch_DIR=...) and run it on a machine with a GPU";
}

CudagraphObservation run_cudagraph(const OpBinding&, const Contract&, const Case&) {
  throw std::logic_error("run_cudagraph: " + cudagraph_unavailable());
}

}  // namespace opc
