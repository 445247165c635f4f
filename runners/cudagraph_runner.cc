// The cudagraph mode against a CUDA LibTorch (see cudagraph_runner.h).
#include "runners/cudagraph_runner.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>

#include "generators/case_gen.h"
#include "generators/layout.h"
#include "runners/eager_runner.h"
#include "runners/materialize.h"
#include "support/error_text.h"

namespace opc {
namespace {

// A materialized case moved to the GPU: the same bytes, the same views.
struct DeviceCase {
  std::vector<c10::IValue> args;
  std::vector<TensorArg> tensors;
};

DeviceCase to_device(const Materialized& host) {
  DeviceCase d;
  d.args = host.args;
  for (const TensorArg& t : host.tensors) {
    at::Tensor storage = t.storage.to(at::kCUDA);
    at::Tensor view = storage.as_strided(t.view.sizes(), t.view.strides(),
                                         t.view.storage_offset() - t.storage.storage_offset());
    d.args[t.arg] = view;
    d.tensors.push_back({t.arg, storage, view});
  }
  return d;
}

// A case's data on the host, with garbage in rows n.. of every batch-sized tensor.
struct HostCase {
  Case c;
  std::unique_ptr<CaseFacts> facts;
  Materialized m;
};

HostCase host_case(const Case& c, const Contract& contract, int64_t real_rows, int variant) {
  HostCase h{c, nullptr, {}};
  h.facts = std::make_unique<CaseFacts>(h.c, contract);
  h.m = materialize(h.c, contract, *h.facts);
  if (real_rows >= 0)
    for (const TensorArg& t : h.m.tensors)
      if (const int axis = contract.cudagraph.arg_axis[t.arg]; axis >= 0)
        fill_garbage_rows(t.view, axis, real_rows, variant, /*integers=*/false);
  return h;
}

at::Tensor rows_of(const at::Tensor& t, int axis, int64_t n) {
  if (axis < 0 || n < 0) return t;
  return real_rows(t, axis, n);
}

// The results the oracle compares: tensor returns and mutable arguments, real rows only.
std::vector<std::pair<std::string, at::Tensor>> results(const Contract& contract,
                                                        const OpBinding& op,
                                                        const std::vector<c10::IValue>& rets,
                                                        const DeviceCase& d, int64_t real_rows) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  const CudagraphSpec& g = contract.cudagraph;
  for (size_t r = 0; r < rets.size(); ++r)
    if (rets[r].isTensor())
      out.emplace_back("return " + std::to_string(r),
                       rows_of(rets[r].toTensor(), g.return_axis[r], real_rows).cpu());
  for (const TensorArg& t : d.tensors)
    if (op.annotations.mutable_arg[t.arg])
      out.emplace_back("argument '" + contract.args[t.arg].name + "'",
                       rows_of(t.view, g.arg_axis[t.arg], real_rows).cpu());
  return out;
}

std::string cuda_text(const std::exception& e) { return error_text(e); }

// One graph: its static inputs (allocated once, at capture size) and its outputs, which
// live in the graph's pool and are rewritten by each replay.
struct Captured {
  int64_t size = -1;
  Case c;
  DeviceCase statics;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<c10::IValue> rets;
  std::string error;
};

void capture_once(Captured& g, const OpBinding& op, const Contract& contract, at::cuda::MempoolId_t pool) {
  HostCase h = host_case(g.c, contract, -1, 0);
  g.statics = to_device(h.m);
  // Warm-up outside the capture, as vLLM does, so lazy initialisation (cuBLAS handles,
  // workspaces) does not happen inside it.
  std::vector<TensorMeta> before;
  for (const TensorArg& t : g.statics.tensors) before.push_back(TensorMeta::of(t.view));
  call_boxed(op, g.statics.args);
  c10::cuda::device_synchronize();
  // A graph replays into the buffers it captured: an op that gives its arguments another
  // shape or storage cannot be captured meaningfully (the mutation clause says what changed).
  for (size_t i = 0; i < before.size(); ++i)
    if (const std::string change = metadata_change(before[i], TensorMeta::of(g.statics.tensors[i].view));
        !change.empty()) {
      g.error = "the op changed argument '" + contract.args[g.statics.tensors[i].arg].name +
                "' (" + change + ") in the warm-up before capture at batch size " +
                std::to_string(g.size) + ": a captured graph replays into the tensors as captured";
      return;
    }
  g.graph = std::make_unique<at::cuda::CUDAGraph>();
  g.graph->capture_begin(pool);
  try {
    g.rets = call_boxed(op, g.statics.args);
  } catch (const std::exception& e) {
    g.error = "capture at batch size " + std::to_string(g.size) + " failed: " + cuda_text(e);
  }
  try {
    g.graph->capture_end();
  } catch (const std::exception& e) {
    // CUDAGraph's capture_end and reset() undo the allocator's routing into the pool.
    if (g.error.empty())
      g.error = "capture at batch size " + std::to_string(g.size) + " failed: " + cuda_text(e);
  }
  if (!g.error.empty()) {
    (void)cudaGetLastError();  // an invalidated capture is not sticky: clear it
    g.graph.reset();
    g.rets.clear();
  }
}

void capture(Captured& g, const OpBinding& op, const Contract& contract, at::cuda::MempoolId_t pool) {
  try {
    capture_once(g, op, contract, pool);
  } catch (const std::exception& e) {
    if (g.error.empty())
      g.error = "before capture at batch size " + std::to_string(g.size) + ": " + cuda_text(e);
  }
}

GraphReplay replay(Captured& g, const OpBinding& op, const Contract& contract, const Case& c,
                   int64_t real_rows, int round) {
  GraphReplay r;
  r.capture_size = g.size;
  if (!g.error.empty()) {
    r.error = g.error;
    return r;
  }
  // New data (another seed), garbage in the padded rows; copied into the static inputs.
  Case fresh = g.c;
  fresh.data_seed = c.data_seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(round + 1));
  HostCase h = host_case(fresh, contract, real_rows, round % 2);
  for (size_t i = 0; i < h.m.tensors.size(); ++i) g.statics.tensors[i].storage.copy_(h.m.tensors[i].storage);
  try {
    g.graph->replay();
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    r.error = "replay of the graph captured at batch size " + std::to_string(g.size) +
              " failed: " + cuda_text(e);
    return r;
  }
  const auto replayed = results(contract, op, g.rets, g.statics, real_rows);
  for (size_t i = 0; i < h.m.tensors.size(); ++i) {
    const TensorArg& t = h.m.tensors[i];
    if (op.annotations.mutable_arg[t.arg]) continue;
    if (!at::equal(g.statics.tensors[i].storage.cpu().view(at::kByte), t.storage.view(at::kByte)))
      r.inputs_written.push_back(contract.args[t.arg].name);
  }

  // The same data, eagerly on the GPU at n rows.
  HostCase e = host_case(c, contract, -1, 0);
  for (size_t i = 0; i < e.m.tensors.size(); ++i) {
    const int axis = contract.cudagraph.arg_axis[e.m.tensors[i].arg];
    e.m.tensors[i].view.copy_(rows_of(h.m.tensors[i].view, axis, real_rows));
  }
  DeviceCase d = to_device(e.m);
  const auto rets = call_boxed(op, d.args);
  c10::cuda::device_synchronize();
  const auto eager = results(contract, op, rets, d, real_rows);
  for (size_t i = 0; i < eager.size() && i < replayed.size(); ++i)
    r.outputs.push_back({eager[i].first, eager[i].second, replayed[i].second});
  return r;
}

}  // namespace

std::string cudagraph_unavailable() {
  if (c10::cuda::device_count() == 0)
    return "no CUDA device is visible to this process (built against a CUDA LibTorch, but "
           "CUDA graphs need a GPU)";
  return "";
}

CudagraphObservation run_cudagraph(const OpBinding& op, const Contract& contract, const Case& c) {
  set_context(contract, c);
  const CudagraphSpec& spec = contract.cudagraph;
  CudagraphObservation obs;
  std::vector<Captured> graphs;
  if (spec.batch_slot < 0) {
    graphs.push_back({-1, c});
  } else {
    obs.real_rows = c.values[spec.batch_slot];
    const auto& sizes = spec.capture_sizes;
    auto at = std::lower_bound(sizes.begin(), sizes.end(), obs.real_rows);
    for (; at != sizes.end() && graphs.size() < 2; ++at) {
      Case sized = with_value(c, contract, spec.batch_slot, *at);
      if (case_is_valid(sized, contract)) graphs.push_back({*at, std::move(sized)});
    }
    if (graphs.empty()) {
      obs.not_captured = std::to_string(obs.real_rows) +
                         " rows is above every capture size that fits the contract: vLLM runs "
                         "such a batch eagerly";
      return obs;
    }
  }
  try {
    // Eager on the GPU first: an op that cannot run there has nothing to capture.
    HostCase probe = host_case(c, contract, -1, 0);
    DeviceCase d = to_device(probe.m);
    call_boxed(op, d.args);
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    obs.eager_error = cuda_text(e);
    return obs;
  }

  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard on_side(side);  // capture needs a stream other than the default
  const at::cuda::MempoolId_t shared = at::cuda::graph_pool_handle();
  for (auto g = graphs.rbegin(); g != graphs.rend(); ++g)  // largest first, as vLLM does
    capture(*g, op, contract, spec.shared_pool ? shared : at::cuda::graph_pool_handle());
  // Out of order: the small graph, the large one, the small one again.
  std::vector<size_t> order{0, graphs.size() - 1, 0};
  for (size_t round = 0; round < order.size(); ++round) {
    try {
      obs.replays.push_back(replay(graphs[order[round]], op, contract, c, obs.real_rows,
                                   static_cast<int>(round)));
    } catch (const std::exception& e) {
      GraphReplay r;
      r.capture_size = graphs[order[round]].size;
      r.error = cuda_text(e);
      obs.replays.push_back(std::move(r));
    }
  }
  return obs;
}

}  // namespace opc
