// `opcontract check`: each contract against its op (or its listed regressions), a table
// per op, and optionally JSON results and a rewritten known-findings file.
#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <thread>

#include "check/check_contract.h"
#include "cli/command.h"
#include "generators/admission.h"
#include "generators/recording.h"
#include "reports/known_file.h"
#include "reports/run_report.h"
#include "runners/op_binding.h"
#include "support/atomic_file.h"
#include "support/platform.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract check CONTRACT... [--target Q] [--regressions] [--load LIB.so]...
                               [--cases N] [--seed S] [--json FILE]
                               [--case-timeout SECONDS] [--no-isolation]
                               [--known FILE [--update-known]] [--modes M,...] [--jobs N]
                               [--variant TEXT] [--traffic RECORDING]...

  Checks each contract against its op: the contract's `op` when registered, else its
  `port` (opcontract's bundled port), or Q given with --target.
  --regressions  checks each contract's listed regression targets instead; passes when each
             is caught by exactly the clauses it expects.
  --load     loads an op library (dlopen) before checking; repeatable.
  --cases    generated cases per contract (default 100).
  --seed     seed of the case generator (default 20261202): same seed, same cases.
  --json     also writes the results as JSON (docs/format.md, "Results").
  --case-timeout  seconds one case may take, all modes together (default: the contract's
             time_limit, else 10); an op past it is killed and reported as a crash.
  --no-isolation  runs the op in this process instead of a forked worker (for a debugger):
             a crash of the op then ends the run.
  --known    an expected-failures file (JSON): a finding it lists for the contract and target
             is known (xfail), a new one fails, a listed one not found fails (xpass).
  --update-known  rewrites that file from this run's findings (listed reasons kept).
  --modes    the modes to run besides eager, e.g. fake,compiled (default: the contract's).
  --jobs     checks run side by side, each with its own worker (default: one per core);
             each worker's ops then get cores / N threads. The report is the same.
  --traffic  a recording of a real program's op calls (python -m opcontract.record): each
             call the contract admits runs first, its geometry as recorded (shapes, strides,
             an in-place use), its values drawn afresh; repeatable. `opcontract admit` says
             which calls are admitted and why the others are not.
  --variant  words that say which build of the target this run judges, added to every
             result's `checked` ("vLLM's pick on this CPU"); `opcontract report` keeps
             results with different `checked` apart (a row per op and build).
)";

void finish(Args& a) {
  if (a.contracts.empty()) throw UsageError("check needs at least one CONTRACT.yaml");
  if (a.update_known && a.known.empty()) throw UsageError("--update-known needs --known FILE");
  if (a.regressions && !a.target.empty())
    throw UsageError("--regressions checks the targets the contract lists; drop --target");
  if (a.cases < 0) a.cases = 100;
  if (a.jobs == 0) a.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The command line's options, with a progress line: one updating line on a terminal,
// a line a second in CI.
CheckOptions options_with_progress(const Args& a) {
  CheckOptions options = check_options(a);
  options.progress = [tty = isatty(STDERR_FILENO), total = a.cases](const ContractResult& r, double rate) {
    std::fprintf(stderr, "%s[opcontract] %s: %d/%d cases, %.0f cases/s, %zu finding(s)%s", tty ? "\r" : "",
                 r.target.c_str(), r.cases, total, rate, r.findings.size(), tty ? "" : "\n");
  };
  return options;
}

// The recorded calls a contract admits, as cases run before the generated ones: their
// geometry kept, their values drawn from a seed of their own.
std::vector<CheckOptions::Replayed> recorded_cases(const Contract& contract, const std::vector<RecordedCall>& calls,
                                                   uint64_t seed) {
  std::vector<CheckOptions::Replayed> out;
  for (const RecordedCall& call : calls) {
    if (call.op != contract.op) continue;
    Admission a = admit(call, contract);
    if (!a.admitted) continue;
    a.as_case->data_seed = seed ^ (0x9e3779b97f4a7c15ULL * (out.size() + 1));
    out.push_back({call.where.substr(0, call.where.rfind(':')), *a.as_case});  // the recording it came from
  }
  return out;
}

// One check of the run: a contract against its target or one of its regressions.
struct Planned {
  std::shared_ptr<const Contract> contract;
  std::string target;
  const Regression* regression = nullptr;
};

// Each contract against its target, or against each regression it lists, in order.
std::vector<Planned> plan_checks(const std::vector<std::shared_ptr<const Contract>>& contracts, const Args& a) {
  std::vector<Planned> planned;
  for (const auto& c : contracts) {
    if (!a.regressions) {
      planned.push_back({c, target_name(*c, a.target), nullptr});
      continue;
    }
    if (c->regressions.empty()) std::cout << "\n== " << c->op << ": no regressions listed in " << c->file << "\n";
    for (const auto& r : c->regressions) planned.push_back({c, r.target, &r});
  }
  return planned;
}

// Calls run(i) for i in [0, n) on up to `jobs` threads; each thread takes the next i.
void run_side_by_side(size_t n, int jobs, const std::function<void(size_t)>& run) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) run(i);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs && static_cast<size_t>(t) < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

// The planned checks, `a.jobs` side by side (each its own worker process: the cost of the
// fake and compiled modes is per case and per compile, so checks scale with the cores);
// each worker's ops get an equal share of the cores as threads.
std::vector<RunEntry> check_all(const std::vector<std::shared_ptr<const Contract>>& contracts, const Args& a,
                                const std::vector<KnownEntry>& known, const std::vector<RecordedCall>& recorded,
                                const Session& session) {
  const CheckOptions options = options_with_progress(a);
  const bool tty = isatty(STDERR_FILENO);
  const std::vector<Planned> planned = plan_checks(contracts, a);
  const int jobs = static_cast<int>(std::min<size_t>(a.jobs, std::max<size_t>(planned.size(), 1)));
  if (jobs > 1) at::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / jobs));
  std::vector<RunEntry> run(planned.size());
  run_side_by_side(planned.size(), jobs, [&](size_t i) {
    const Planned& p = planned[i];
    CheckOptions own = options;
    own.known = known_for(known, p.contract->file, p.target);
    if (!p.regression) own.replay_first = recorded_cases(*p.contract, recorded, own.seed);
    own.misuse = a.misuse && (!p.regression || regression_makes_mistakes(p.regression->expect));
    RunEntry& e = run[i];
    e.contract = p.contract;
    e.regression = p.regression;
    // Generation goes on near the recorded calls: their values favoured.
    std::vector<Case> admitted;
    for (const auto& r : own.replay_first) admitted.push_back(r.c);
    e.result = check_contract(admitted.empty() ? *p.contract : favouring_calls(*p.contract, admitted), p.target, own);
    if (tty && e.result.cases >= 64) std::fprintf(stderr, "\r\033[K");
    e.replay_base =
        quote(session.self) + " check " + quote(p.contract->file) + " --target " + quote(p.target) + library_flags(a);
    // A recorded call replays with the recording it came from, before one generated case.
    e.case_replay_base = e.replay_base + " --cases 1 --seed " + std::to_string(own.seed) + " --traffic";
    settle_entry(e);
  });
  return run;
}

// How the run's entries ended.
struct Tally {
  int ok = 0, bad = 0, errors = 0, not_run = 0;
};

Tally tally(const std::vector<RunEntry>& run) {
  Tally t;
  for (const auto& e : run) {
    if (e.result.verdict == Verdict::Error) ++t.errors;
    else if (e.result.regression && !e.result.regression->not_run.empty()) ++t.not_run;
    else if (entry_ok(e)) ++t.ok;
    else ++t.bad;
  }
  return t;
}

// The closing line: how many held (or were caught as expected), and which did not run.
void print_tally(const Args& a, const Tally& t, size_t entries) {
  std::cout << "\n"
            << (a.regressions ? "regressions caught as expected: " : "contracts holding: ") << t.ok << "/" << entries;
  if (t.not_run) std::cout << " (" << t.not_run << " not run)";
  if (t.errors) std::cout << " (" << t.errors << " error" << (t.errors > 1 ? "s" : "") << ")";
  std::cout << "\n";
  // ctest reads this line as a skip (SKIP_REGULAR_EXPRESSION), so a GPU-only check shows
  // as skipped, with its reason above, rather than as passed.
  if (t.not_run && t.not_run == static_cast<int>(entries))
    std::cout << "SKIPPED: no regression could be judged on this machine\n";
}

int run_check(const Args& a, const Session& session) {
  const auto contracts = load_contracts(a.contracts);
  if (!contracts) return 2;
  const std::vector<KnownEntry> known = a.known.empty() ? std::vector<KnownEntry>{} : load_known_file(a.known);
  const auto recorded = load_recordings(a.traffic);
  if (!recorded) return 2;
  const std::vector<RunEntry> run = check_all(*contracts, a, known, *recorded, session);
  print_text_report(std::cout, run);
  Platform platform = read_platform();
  platform.threads = at::get_num_threads();  // as check_all left it for the checks
  std::cout << "\n" << platform_text(platform);
  const Tally t = tally(run);
  print_tally(a, t, run.size());
  int captured = 0;
  for (const auto& e : run) captured += e.result.captured_lines;
  std::cout << captured_output_line(captured);
  if (!a.json.empty()) write_file_atomically(a.json, json_report(run, platform));
  if (a.update_known) {
    const std::vector<KnownEntry> now = updated_known(known, run);
    write_known_file(a.known, now);
    std::cout << "rewrote " << a.known << ": " << now.size() << " known finding(s)\n";
  }
  for (const auto& e : run)
    if (e.result.verdict == Verdict::Error) std::cerr << "opcontract: error: " << e.result.error() << "\n";
  return t.errors ? 2 : t.bad ? 1 : 0;
}

}  // namespace

Command check_command() {
  return {"check",
          kUsage,
          {"--target", "--no-targeting", "--no-misuse", "--json", "--regressions", "--no-isolation", "--case-timeout",
           "--modes", "--known", "--update-known", "--cases", "--seed", "--jobs", "--variant", "--traffic"},
          finish,
          run_check};
}

}  // namespace opc::cli
