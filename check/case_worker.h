// Crash isolation: checked cases run in a forked worker process, so that an op that
// segfaults, aborts, exits or hangs becomes a `crash` finding with its case, and the run
// goes on with the next case in a fresh worker.
//
//   CaseWorker worker(ops, contract, {.isolate = true, .timeout_s = 10});
//   worker.set_modes({Mode::Eager, Mode::Fake});
//   CaseOutcome out = worker.run(c);  // the oracles' findings, or a crash finding
//
// The worker is forked once and serves cases over a pipe until it dies; the parent never
// calls the op. It is forked from a parent that has not touched CUDA, so the cudagraph
// mode works in it. `isolate = false` runs cases in this process (for a debugger).
#pragma once

#include <sys/types.h>

#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "check/bind_ops.h"
#include "check/options.h"
#include "generators/case.h"
#include "oracles/oracles.h"
#include "spec/contract.h"
#include "support/output_capture.h"

namespace opc {

struct CaseOutcome {
  std::vector<Finding> findings;
  std::vector<int> written;  // arguments whose bytes the eager run changed
  // What the op and torch printed during the case (warnings, prints; a crash's last words),
  // when the worker captures its output; capped (support/output_capture.h).
  std::string output;
  // Why the contract's python_state hook declined the case (python::CaseDeclined): nothing
  // was judged; "" when it was not.
  std::string declined;
  bool worker_died = false;  // the findings hold the crash; not worth shrinking when it hung
  bool hung = false;
  // Wall-clock seconds the worker spent in each mode on this case (from the judge's entering
  // it to the next mode or the reply); empty without isolation.
  std::map<Mode, double> mode_seconds;
};

struct IsolationOptions {
  bool isolate = true;
  double timeout_s = 10;  // per case, all modes together; <= 0: none
  // The worker's standard output and error go to CaseOutcome::output, not to the terminal.
  bool capture_output = true;
  // A new worker process after every case that found something: after a caller's mistake
  // the op accepted and mishandled, the heap may be corrupt, and the next case must not pay
  // for it. A mistake the op refused, or handled right, leaves the worker as it was (a
  // fork costs ~25 ms with vLLM loaded, most of a refused mistake's time).
  bool fresh_after_finding = false;
  // The crash handlers the op's libraries installed (tvm_ffi's prints a symbolised backtrace,
  // about a second a crash) stay in the worker; otherwise a crash kills it at once, with
  // the same signal.
  bool crash_handlers = false;
};

class CaseWorker {
 public:
  CaseWorker(const CaseOps& ops, const Contract& contract, IsolationOptions options);
  ~CaseWorker();
  CaseWorker(const CaseWorker&) = delete;
  CaseWorker& operator=(const CaseWorker&) = delete;

  // The modes each case runs in (eager always); sent with every case.
  void set_modes(std::vector<Mode> modes) { modes_ = std::move(modes); }
  const std::vector<Mode>& modes() const { return modes_; }

  // Throws CheckError when the worker could not evaluate the case for a reason that is
  // the contract's, not the op's (an expression that fails to evaluate, say).
  // A caller's mistake that faults or hangs is run again without the mistake, in the same
  // fenced memory: when that faults or hangs too, the outcome is the valid call's (a `crash`
  // finding on valid input, Case::fenced), not the mistake's; otherwise the misuse finding
  // says the valid call runs clean.
  CaseOutcome run(const Case& c);

  // Another worker for the same op and contract, for caller's mistakes: eager only, forked
  // anew after every case that found something.
  std::unique_ptr<CaseWorker> mistakes_twin() const;
  // Another, in the same modes, with the libraries' crash handlers kept: what an op prints
  // as it dies.
  std::unique_ptr<CaseWorker> crash_handlers_twin() const;

  // How many worker processes this one has forked so far.
  int forked() const { return forked_; }

  // Why the cudagraph mode cannot run in a worker ("" when it can), asked of the
  // worker itself so that this process never initialises CUDA.
  std::string cudagraph_unavailable();

 private:
  void start();
  void stop();
  std::string request(char kind, const std::string& body, CaseOutcome* died);
  CaseOutcome run_isolated(const Case& c);
  // Tells a mistake's fault or hang (`out`, a misuse case's death) from the valid call's.
  void attribute_fault(const Case& c, CaseOutcome& out);

  CaseOps ops_;
  const Contract& contract_;
  std::vector<Mode> modes_{Mode::Eager};
  IsolationOptions options_;
  std::unique_ptr<OutputCapture> output_;  // shared with the worker when it captures
  pid_t pid_ = -1;
  int forked_ = 0;
  int to_child_ = -1, from_child_ = -1;
  // A page shared with the worker: the mode it is running (a crash's mode), how long the
  // case in flight has spent in torch.compile calls and python_state hooks, and since when
  // it is in one (0: not; `depth`: how many are open, a hook runs inside a compile),
  // neither counted against its time limit (steady-clock milliseconds, the same clock in
  // both processes); and the case's time per mode so far, with since when it is in the
  // current one (microseconds; 0: in none yet).
  struct SharedPage {
    int mode;
    int depth;
    int64_t grace_ms;
    int64_t off_clock_since_ms;
    int64_t mode_since_us;
    int64_t mode_us[std::size(kAllModes)];
  };
  // Adds the time since the mode's clock last ran to the current mode's, from now.
  static void clock_mode(volatile SharedPage* shared);
  // Ends the current mode's time, and collects the case's time per mode.
  std::map<Mode, double> settle_mode_clock();
  volatile SharedPage* shared_ = nullptr;
};

// The isolation a check runs with: a timeout the user gave beats the contract's time_limit.
IsolationOptions isolation_for(const Contract& contract, const CheckOptions& options);

}  // namespace opc
