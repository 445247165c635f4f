// cudagraph: a capture or replay fails, or a replay's real rows differ from the op run
// eagerly on them, or a replay writes a static input the op must only read.
#include <cstring>

#include "oracles/oracles.h"
#include "runners/compiled_runner.h"
#include "runners/cudagraph_runner.h"

namespace opc {
namespace {

// "[3] eager 0.5, replay nan": the first element that differs, by bytes.
std::string first_difference(const at::Tensor& eager, const at::Tensor& replayed) {
  const at::Tensor a = eager.contiguous().flatten(), b = replayed.contiguous().flatten();
  const size_t item = a.element_size();
  const auto* pa = static_cast<const uint8_t*>(a.data_ptr());
  const auto* pb = static_cast<const uint8_t*>(b.data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * item, pb + i * item, item) != 0) {
      const at::Tensor ea = a.narrow(0, i, 1).to(at::kDouble), eb = b.narrow(0, i, 1).to(at::kDouble);
      return "element " + std::to_string(i) + " (row-major): eager " +
             std::to_string(ea.item<double>()) + ", replay " + std::to_string(eb.item<double>());
    }
  return "";
}

std::string where(const GraphReplay& r, int64_t real_rows) {
  if (r.capture_size < 0) return "the graph captured at the case's own sizes";
  return "the graph captured at batch size " + std::to_string(r.capture_size) + " (" +
         std::to_string(real_rows) + " real rows, rows " + std::to_string(real_rows) + ".." +
         std::to_string(r.capture_size) + " garbage)";
}

}  // namespace

std::vector<Finding> check_cudagraph(const CudagraphObservation& obs) {
  if (!obs.eager_error.empty())
    return {{Clause::Crash, "the op threw when run eagerly on the GPU: " + obs.eager_error}};
  std::vector<Finding> out;
  for (size_t k = 0; k < obs.replays.size(); ++k) {
    const GraphReplay& r = obs.replays[k];
    const std::string replay = "replay " + std::to_string(k + 1) + " of " + where(r, obs.real_rows);
    if (!r.error.empty()) {
      out.push_back({Clause::Cudagraph, r.error + " (under vLLM's CUDA graphs the engine would not start)"});
      return out;
    }
    for (const std::string& name : r.inputs_written)
      out.push_back({Clause::Cudagraph, replay + " wrote its input '" + name +
                                      "', which the schema says the op only reads: the next "
                                      "replay starts from corrupted static inputs"});
    for (const GraphOutput& o : r.outputs) {
      if (o.eager.sizes() != o.replayed.sizes()) {
        out.push_back({Clause::Cudagraph, replay + ": " + o.what + " has sizes " +
                                        shape_text(o.replayed.sizes().vec()) + " but eager on the real rows gives " +
                                        shape_text(o.eager.sizes().vec()) +
                                        "; if it is batch-sized, give its shape under returns: so "
                                        "its batch axis is known"});
        continue;
      }
      if (dense_bytes(o.eager) == dense_bytes(o.replayed)) continue;
      out.push_back({Clause::Cudagraph, replay + ": " + o.what +
                                      " differs from eager on the real rows, first at " +
                                      first_difference(o.eager, o.replayed) +
                                      ". A graph replays the kernels and addresses of its capture: "
                                      "values baked in at capture, or reads of the padded rows, show here"});
    }
    if (!out.empty()) return out;
  }
  return out;
}

}  // namespace opc
