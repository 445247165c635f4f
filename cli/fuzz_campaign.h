// `opcontract fuzz`: long, resumable, shardable checks that keep what they find.
//
//   FuzzOptions o;  o.seconds = 900;  o.check.shard = 1;  o.check.shards = 4;
//   o.corpus_dir = "corpus";  o.out_dir = "fuzz-out";
//   int exit_code = run_fuzz_campaign(contracts, o, std::cout);
//
// Per contract: the corpus (corpus/<contract path with / as _>/*.yaml, case files) is
// replayed first, before any generated case; then generated cases run -- in shard I of N
// only case indices i with i % N == I, the same cases as an unsharded run draws -- until
// the case budget or the time is spent, or `stop` is set (Ctrl-C). Each new finding is
// written into the corpus at once (atomically), the result JSON after each contract, and
// a state file that lets the same command resume where it stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "check/check_contract.h"
#include "spec/contract.h"
#include "reports/known_file.h"

namespace opc::cli {

struct FuzzOptions {
  // How each contract is checked: seed, shard, modes, isolation, Python, targeting, time
  // limit per case, the stop flag. Its `cases` is the budget of generated cases per
  // contract, 0 for none (the time bounds the run).
  CheckOptions check;
  std::string target;         // --target, "" for each contract's own
  double seconds = 0;         // time per contract, 0: unbounded (cases)
  std::string corpus_dir;     // "" for none
  std::string out_dir;        // results, state; required
  std::vector<KnownEntry> known;  // --known: the expected-failures ratchet
  std::string replay_base;       // "opcontract check --load L": the prefix of replay commands
  std::string case_replay_base;  // "opcontract replay --load L", for corpus cases
};

// Returns the exit code: 0 nothing found, 1 findings, 2 errors, 130 stopped early.
int run_fuzz_campaign(const std::vector<std::shared_ptr<const Contract>>& contracts,
                      const FuzzOptions& options, std::ostream& out);

// "90", "90s", "15m", "2h" -> seconds; throws std::invalid_argument otherwise.
double parse_duration(const std::string& text);

}  // namespace opc::cli
