// How a check runs: how many cases from which seed, in which modes, isolated or not, and
// the hooks a campaign or the command line uses (progress, checkpoints, each finding).
//
//   CheckOptions opt;  opt.cases = 100;  opt.seed = 7;  opt.modes = {Mode::Fake};
//   ContractResult r = check_contract(contract, "opc_vllm::rms_norm", opt);
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "check/result.h"
#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

inline constexpr uint64_t kDefaultSeed = 20261202;

struct CheckOptions {
  int cases = 100;
  uint64_t seed = kDefaultSeed;
  int max_shrink_runs = 2000;  // op calls one shrink may spend
  // Cases run in a forked worker (check/case_worker.h): a crash or a hang of the op is
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
  // What the op and torch print during a case (warnings, prints) is kept with the case
  // (ContractFinding::output, ContractResult::captured_lines) instead of reaching the
  // terminal; false: printed as it comes (--verbose). Isolated runs only.
  bool capture_output = true;
  // Called about once a second during a long check with the result so far.
  std::function<void(const ContractResult& so_far, double cases_per_s)> progress;
  // Modes to run besides eager, which always runs (empty: the contract's own).
  std::vector<Mode> modes;
  // Which build of the target this run judges, in words (check --variant): added to each
  // result's `checked`, so that reports keep the builds' results apart.
  std::string variant;
  // Known findings from a ratchet file (reports/known_file.h) for this contract and target,
  // applied like the contract's own known_findings.
  std::vector<KnownFinding> known;

  // Campaigns (opcontract fuzz, cli/fuzz_campaign.h):
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
  // Whether every fourth valid case also runs as a caller's mistake (generators/misuse.h),
  // unless the contract skips misuse; false: --no-misuse.
  bool misuse = true;
  // Whether generation steers towards unhit branches, unmade in-place uses and unseen
  // layout pairs (generators/targeting.h); false: plain generation (--no-targeting, for
  // comparing the two in bench).
  bool targeted = true;
};

}  // namespace opc
