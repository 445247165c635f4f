#include "check/mode_plan.h"

#include <algorithm>

#include "runners/torch_compile_runner.h"

namespace opc {
namespace {

// A kernel the CUDA dispatch key would reach: its own or a composite one.
bool has_cuda_kernel(const OpBinding& op) {
  return op.handle.hasKernelForAnyDispatchKey(
      c10::DispatchKeySet({c10::DispatchKey::CUDA, c10::DispatchKey::CompositeExplicitAutograd,
                           c10::DispatchKey::CompositeImplicitAutograd}));
}

// Why the cudagraph mode cannot run `op` ("" when it can): what the worker says about
// this build and machine, or no CUDA kernel.
std::string cudagraph_unavailable_for(const OpBinding& op, CaseWorker& worker) {
  if (std::string why = worker.cudagraph_unavailable(); !why.empty()) return why;
  if (!has_cuda_kernel(op))
    return op.name + " has no CUDA kernel registered (a CPU-only port), so there is nothing to capture";
  return "";
}

std::map<Mode, std::string> ran_as_text(const CaseOps& ops) {
  std::map<Mode, std::string> ran_as;
  ran_as[Mode::Fake] = ops.real_pytorch ? "PyTorch's FakeTensorMode (its Python fakes and Meta kernels), static and "
                                          "symbolic sizes"
                                        : "the op's C++ Meta kernel on concrete sizes, not PyTorch's FakeTensorMode (" +
                                              ops.without_pytorch + ")";
  ran_as[Mode::Compiled] =
      ops.real_pytorch
          ? "torch.compile (aot_eager and inductor, fullgraph, dynamic; up to " +
                std::to_string(kTorchCompileGraphBudget) +
                " graphs per backend, cases needing more ran in the model only) and "
                "opcontract's C++ model of it"
          : "opcontract's C++ model of torch.compile only, not torch.compile itself (" + ops.without_pytorch + ")";
  return ran_as;
}

// Why a `device: cuda` contract's real runs cannot happen here ("" when they can, or for a
// CPU contract): no GPU, or no path yet that runs the op on CUDA tensors.
std::string real_runs_unavailable(const Contract& contract, CaseWorker& worker) {
  if (contract.device != "cuda") return "";
  const std::string no_gpu = worker.cudagraph_unavailable();
  return "the contract's tensors live on CUDA (device: cuda), and " +
         (no_gpu.empty() ? std::string("opcontract makes its cases' real tensors on the CPU only so far") : no_gpu) +
         "; the fake mode runs alone, on fake CUDA tensors";
}

}  // namespace

ModePlan plan_modes(const Contract& contract, const std::vector<Mode>& asked, const CaseOps& ops, CaseWorker& worker) {
  ModePlan plan{{}, {}, ran_as_text(ops), {}};
  const std::string no_real_runs = real_runs_unavailable(contract, worker);
  for (Mode m : kAllModes) {
    if (m == Mode::Eager && !contract.skip.count(m) && no_real_runs.empty()) {  // the base of every other mode
      plan.run.push_back(m);
      continue;
    }
    std::string why;
    if (auto skip = contract.skip.find(m); skip != contract.skip.end())
      why = std::string(kSkippedByContract) + ": " + skip->second;
    else if (!asked.empty() && std::find(asked.begin(), asked.end(), m) == asked.end()) why = "left out by --modes";
    else if (m != Mode::Fake && !no_real_runs.empty()) why = no_real_runs;
    else if (m == Mode::Cudagraph) why = cudagraph_unavailable_for(ops.op, worker);
    if (why.empty()) plan.run.push_back(m);
    else plan.not_run[m] = why;
  }
  const bool eager_runs = !plan.run.empty() && plan.run.front() == Mode::Eager;
  for (Mode m : kAllModes)
    for (const ClauseInfo& c : kClauses)
      if (judges(contract, m, c.clause, eager_runs)) plan.judged[m].push_back(c.clause);
  return plan;
}

}  // namespace opc
