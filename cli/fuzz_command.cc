// `opcontract fuzz`: the command line of a fuzz campaign (cli/fuzz_campaign.h), with
// Ctrl-C and SIGTERM stopping it cleanly.
#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "cli/fuzz_campaign.h"
#include "reports/known_file.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract fuzz CONTRACT... (--time DUR | --cases N) --out DIR [--corpus DIR] [--seed S]
                              [--shard I/N] [--modes M,...] [--target Q] [--load LIB.so]...
                              [--case-timeout SECONDS] [--no-isolation] [--known FILE]

  A campaign: per contract, replays the corpus (DIR/<contract>/*.yaml) first, then runs
  generated cases until --time (90s, 15m, 2h) or --cases is spent; --shard I/N runs the
  cases i with i % N == I of the same sequence, so shards merged (report) find what one run
  finds. Each new finding is saved into the corpus at once; the progress (state) and the
  results so far are saved every few seconds, so rerunning the same command resumes within
  seconds of where it stopped, even after a SIGKILL. Ctrl-C stops cleanly (exit 130).
)";

void finish(Args& a) {
  if (a.contracts.empty()) throw UsageError("fuzz needs at least one CONTRACT.yaml");
  if (a.out.empty() || (a.time_s == 0 && a.cases < 0))
    throw UsageError("fuzz needs --out DIR and --time DUR or --cases N");
  if (a.cases < 0) a.cases = 0;  // no case limit: the time bounds it
}

std::atomic<bool> g_stop{false};

// Ctrl-C (or a CI runner's SIGTERM) ends a campaign after the case in flight; a second
// one ends the process.
void on_stop_signal(int sig) {
  g_stop = true;
  std::signal(sig, SIG_DFL);
}

FuzzOptions fuzz_options(const Args& a, const Session& session) {
  FuzzOptions o;
  o.check = check_options(a);
  o.check.stop = &g_stop;
  o.target = a.target;
  o.seconds = a.time_s;
  o.corpus_dir = a.corpus;
  o.out_dir = a.out;
  if (!a.known.empty()) o.known = load_known_file(a.known);
  o.replay_base = quote(session.self) + " check" + library_flags(a);
  o.case_replay_base = quote(session.self) + " replay" + library_flags(a);
  return o;
}

int run_fuzz(const Args& a, const Session& session) {
  const auto contracts = load_contracts(a.contracts);
  if (!contracts) return 2;
  const FuzzOptions o = fuzz_options(a, session);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  return run_fuzz_campaign(*contracts, o, std::cout);
}

}  // namespace

Command fuzz_command() {
  return {"fuzz",
          kUsage,
          {"--target", "--no-targeting", "--no-misuse", "--no-isolation", "--case-timeout", "--modes", "--time", "--shard",
           "--corpus", "--known", "--out", "--cases", "--seed"},
          finish,
          run_fuzz};
}

}  // namespace opc::cli
