#include "cli/bench.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "check/case_judge.h"
#include "check/check_contract.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/targeting.h"
#include "oracles/oracles.h"
#include "reports/run_report.h"
#include "runners/compiled_runner.h"
#include "runners/eager_runner.h"
#include "runners/fake_runner.h"
#include "runners/python/bridge.h"
#include "runners/torch_compile_runner.h"
#include "support/names.h"

namespace opc::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Repeats `round` until at least `min_s` seconds have passed, after `warm_up` (first-call
// costs -- dispatcher caches, the allocator, imports -- are not the mode's); returns rounds
// per second.
template <class W, class F>
double rate(W&& warm_up, F&& round, double min_s) {
  warm_up();
  int rounds = 0;
  const auto t0 = Clock::now();
  double s = 0;
  do {
    round();
    ++rounds;
    s = seconds_since(t0);
  } while (s < min_s);
  return rounds / s;
}

// Cases a per-case rate warms up on: enough to reach every first-call cost, few enough
// that a mode at 50 cases/s does not spend a whole pass on it.
constexpr int kWarmUpCases = 64;

// Generated cases until every declared branch was hit and every in-place use made, drawn
// as a check draws them (plain or targeted): 0 when nothing is declared, -1 when `limit`
// cases did not get there.
int first_complete(const Contract& contract, uint64_t seed, bool targeted, int limit) {
  auto contract_ptr = std::make_shared<const Contract>(contract);
  const rc::Gen<Case> gen = case_gen(contract_ptr);
  Coverage coverage(contract);
  if (coverage.complete()) return 0;
  rc::Random master(seed);
  for (int i = 0; i < limit; ++i) {
    coverage.add((targeted ? targeted_draw(gen, master.split(), i % 101, coverage)
                           : gen(master.split(), i % 101)).value());
    if (coverage.complete()) return i + 1;
  }
  return -1;
}

std::string cases_text(int n) { return n < 0 ? "not reached" : std::to_string(n); }

// Per listed regression: how many cases the check needed to catch each clause, with plain
// and with targeted generation, and how small the shrunk case got -- the figures a
// generator change should improve. Branch coverage likewise.
void bench_regressions(const Contract& contract, uint64_t seed, int budget, bool python, std::ostream& out) {
  char line[256];
  if (!contract.branches.empty() || !contract.inplace.empty()) {
    std::snprintf(line, sizeof line, "branches: every declared branch hit after %s case(s) plain, %s targeted (up to %d)\n",
                  cases_text(first_complete(contract, seed, false, budget)).c_str(),
                  cases_text(first_complete(contract, seed, true, budget)).c_str(), budget);
    out << line;
  }
  if (contract.regressions.empty()) return;
  out << "regressions (up to " << budget << " cases each, seed " << seed
      << "; cases until caught with plain / targeted generation):\n";
  std::snprintf(line, sizeof line, "  %-56s %-22s %8s %8s %10s %7s\n", "target", "clause (mode)",
                "plain", "targeted", "shrunk to", "steps");
  out << line;
  for (const Regression& g : contract.regressions) {
    // Each run stops once every clause the regression expects has been found.
    auto run = [&](bool targeted) {
      CheckOptions options;
      options.seed = seed;
      options.cases = budget;
      options.python = python;
      options.targeted = targeted;
      options.misuse = std::find(g.expect.begin(), g.expect.end(), Clause::Misuse) != g.expect.end();
      std::atomic<bool> done{false};
      std::set<Clause> missing(g.expect.begin(), g.expect.end());
      options.stop = &done;
      options.on_finding = [&](const ContractFinding& f) {
        missing.erase(f.clause);
        if (missing.empty()) done = true;
      };
      return check_contract(contract, g.target, options);
    };
    const ContractResult plain = run(false);
    const ContractResult r = run(true);
    if (r.verdict == Verdict::Error) {
      out << "  " << g.target << ": error: " << r.error() << "\n";
      continue;
    }
    for (const ContractFinding& f : r.findings) {
      const std::string where = to_string(f.clause) + mode_note(f.mode);
      std::string before = "-";
      for (const ContractFinding& p : plain.findings)
        if (p.clause == f.clause && p.mode == f.mode) before = p.minimal ? std::to_string(p.cases_tried) : "static";
      if (f.minimal)
        std::snprintf(line, sizeof line, "  %-56s %-22s %8s %8lld %7lld el %7lld\n", g.target.c_str(),
                      where.c_str(), before.c_str(), static_cast<long long>(f.cases_tried),
                      static_cast<long long>(case_numel(*f.minimal)), static_cast<long long>(f.shrink_steps));
      else
        std::snprintf(line, sizeof line, "  %-56s %-22s %8s %8s %10s %7s\n", g.target.c_str(),
                      where.c_str(), "static", "static", "-", "-");
      out << line;
    }
    RunEntry entry{std::make_shared<const Contract>(contract), r, &g, ""};
    settle_entry(entry);
    const RegressionResult& got = *entry.result.regression;
    out << "  " << g.target << ": "
        << (!got.not_run.empty()        ? "not run"
            : got.caught_as_expected    ? "caught as expected"
                                        : "NOT as expected, expected " + clause_names(g.expect))
        << " (" << (r.findings.empty() ? "nothing found" : "found " + clause_names(found_clauses(r))) << ")\n";
  }
}

// Starts the embedded Python for the real fake and compiled figures; false, with the
// reason among the lines, when there is none.
bool python_for_bench(std::vector<std::string>& lines) {
  try {
    python::start();
    return true;
  } catch (const std::exception& e) {
    lines.push_back(std::string("PyTorch's fake and torch.compile: not run (") + e.what() + ")");
    return false;
  }
}

// A mode's rate: whole checked cases per second.
struct Measured {
  std::string name;
  double cases_per_s = 0;
};

// One contract's benchmark: its generated cases and the rates measured on them.
class Bench {
 public:
  Bench(const Contract& contract, const std::string& target, int cases, uint64_t seed)
      : contract_(contract),
        op_(bind_op(target, target == contract.op ? contract.overload : "",
                    target == contract.port ? contract.port_loc : contract.op_loc)),
        gen_(case_gen(std::make_shared<const Contract>(contract))),
        cases_(cases),
        seed_(seed) {
    rc::Random master(seed);
    for (int i = 0; i < cases; ++i) generated_.push_back(gen_(master.split(), i % 101).value());
  }

  // The op alone, boxed through the dispatcher, on materialised inputs; calls per second.
  double bare() {
    std::vector<Materialized> inputs;
    for (const Case& c : generated_) {
      inputs.push_back(materialize(c, contract_, CaseFacts(c, contract_)));
      largest_ = std::max(largest_, case_numel(c));
    }
    auto round = [&] {
      for (size_t i = 0; i < inputs.size(); ++i) {
        set_context(contract_, generated_[i], inputs[i].args);
        call_boxed(op_, inputs[i].args);
      }
    };
    return cases_ * rate(round, round, 1.0);
  }

  // Whole checked cases per second of `run_one` over freshly generated cases (generation
  // included).
  template <class F>
  double case_rate(F&& run_one) {
    auto pass = [&](int n) {
      rc::Random r(seed_);
      for (int i = 0; i < n; ++i) run_one(gen_(r.split(), i % 101).value());
    };
    return cases_ * rate([&] { pass(std::min(cases_, kWarmUpCases)); }, [&] { pass(cases_); }, 1.0);
  }

  double eager() {
    return case_rate([&](const Case& c) {
      case_findings({op_}, contract_, c, CaseFacts(c, contract_), {Mode::Eager}, nullptr);
    });
  }

  // The fake and compiled modes' own cost (their oracles compare with the eager run a
  // check makes anyway): Meta tensors; clones, guard, copy-back and poisoned inputs.
  double fake() {
    return case_rate([&](const Case& c) { run_fake_meta(op_, contract_, c, CaseFacts(c, contract_)); });
  }
  double compiled() {
    return case_rate([&](const Case& c) { run_compiled(op_, contract_, c, CaseFacts(c, contract_)); });
  }

  // The real PyTorch's fake and compiled modes: each a measured rate, and lines saying
  // what stood in the way (no Python) or how torch.compile spent its graphs.
  struct PyTorchRates {
    std::vector<Measured> rates;
    std::vector<std::string> lines;
  };
  PyTorchRates pytorch(bool python, bool fake_runs, bool compiled_runs) {
    PyTorchRates out;
    if (!python) out.lines.push_back("PyTorch's fake and torch.compile: not run (--no-python)");
    if (!python || !(fake_runs || compiled_runs) || !python_for_bench(out.lines)) return out;
    for (const bool symbolic : {false, true}) {
      if (!fake_runs) break;
      out.rates.push_back({std::string("fake (PyTorch FakeTensorMode, ") + (symbolic ? "symbolic" : "static") + " sizes)",
                           case_rate([&](const Case& c) {
                             run_fake_pytorch(op_, contract_, c, CaseFacts(c, contract_), symbolic);
                           })});
    }
    for (const char* backend : kTorchCompileBackends) {
      if (!compiled_runs) break;
      torch_compile(backend, out);
    }
    return out;
  }

  int64_t largest() const { return largest_; }

 private:
  // One backend as a check runs it (the same graph budget): a warm-up pass over the cases
  // compiles what they need, then the rate over cases, graphs there or not; the lines say
  // how many cases ran on a graph, and why each graph was compiled.
  void torch_compile(const char* backend, PyTorchRates& out) {
    int meeting = 0, on_a_graph = 0;
    auto one = [&](const Case& c) {
      const CaseFacts facts(c, contract_);
      // A check judges a case that breaks a requires: by the precondition clause alone.
      if (!broken_requires(facts, contract_).empty()) return;
      ++meeting;
      on_a_graph += !run_torch_compile(op_, contract_, c, facts, backend).skipped;
    };
    const auto t0 = Clock::now();
    for (const Case& c : generated_) one(c);
    const double warm_up = seconds_since(t0);
    const int ran = on_a_graph, eligible = meeting;
    const std::string name = std::string("compiled (torch.compile backend=") + backend + ", dynamic)";
    out.rates.push_back({name, case_rate(one)});
    const std::vector<std::string> graphs = python::compiled_graphs(op_, backend);
    char text[300];
    std::snprintf(text, sizeof text,
                  "%s: %zu graph(s) compiled in a %.1f s warm-up (budget %d); %d of the %d cases meeting the "
                  "requires ran on a graph, the others in the C++ model only",
                  name.c_str(), graphs.size(), warm_up, kTorchCompileGraphBudget, ran, eligible);
    out.lines.push_back(text);
    for (size_t g = 0; g < graphs.size(); ++g)
      out.lines.push_back("  graph " + std::to_string(g + 1) + ": " + graphs[g]);
  }

  const Contract& contract_;
  const OpBinding op_;
  const rc::Gen<Case> gen_;
  const int cases_;
  const uint64_t seed_;
  std::vector<Case> generated_;
  int64_t largest_ = 0;
};

}  // namespace

void run_bench(const Contract& contract, const std::string& target, int cases, uint64_t seed,
               bool python, std::ostream& out) {
  Bench bench(contract, target, cases, seed);
  const double bare = bench.bare();
  std::vector<Measured> rates{{"eager", bench.eager()}};
  const bool fake_runs = !contract.skip.count(Mode::Fake);
  const bool compiled_runs = !contract.skip.count(Mode::Compiled);
  if (fake_runs) rates.push_back({"fake", bench.fake()});
  if (compiled_runs) rates.push_back({"compiled", bench.compiled()});
  const Bench::PyTorchRates pytorch = bench.pytorch(python, fake_runs, compiled_runs);

  char line[200];
  out << "bench " << contract.op << " -> " << target << ": " << cases << " generated cases, largest "
      << bench.largest() << " elements, seed " << seed << ", " << at::get_num_threads() << " thread(s)\n";
  std::snprintf(line, sizeof line, "bare: %.0f calls/s\neager: %.0f cases/s\nbare/eager: %.1f\n", bare,
                rates[0].cases_per_s, bare / rates[0].cases_per_s);
  out << line;
  for (Mode m : {Mode::Fake, Mode::Compiled})
    if (contract.skip.count(m)) out << to_string(m) << ": not run (" << contract.skip.at(m) << ")\n";
  rates.insert(rates.end(), pytorch.rates.begin(), pytorch.rates.end());
  for (size_t i = 1; i < rates.size(); ++i) {
    std::snprintf(line, sizeof line, "%s: %.0f cases/s\n", rates[i].name.c_str(), rates[i].cases_per_s);
    out << line;
  }
  for (const std::string& l : pytorch.lines) out << l << "\n";
  const Measured slowest =
      *std::min_element(rates.begin(), rates.end(), [](const Measured& a, const Measured& b) {
        return a.cases_per_s < b.cases_per_s;
      });
  std::snprintf(line, sizeof line, "slowest: %s %.0f cases/s (of %zu modes measured)\n", slowest.name.c_str(),
                slowest.cases_per_s, rates.size());
  out << line;
  bench_regressions(contract, seed, std::min(cases, 1000), python, out);
}

}  // namespace opc::cli
