#include "cli/bench.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <ATen/Parallel.h>

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

// Repeats `round` until at least `min_s` seconds have passed; returns rounds per second.
template <class F>
double rate(F&& round, double min_s) {
  round();  // warm-up: first-call costs (dispatcher caches, allocator) are not the op's
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
      std::atomic<bool> done{false};
      std::set<std::string> missing(g.expect.begin(), g.expect.end());
      options.stop = &done;
      options.on_finding = [&](const ContractFinding& f) {
        missing.erase(f.clause);
        if (missing.empty()) done = true;
      };
      return check_contract(contract, g.target, options);
    };
    const ContractResult plain = run(false);
    const ContractResult r = run(true);
    if (r.verdict == "error") {
      out << "  " << g.target << ": error: " << r.error << "\n";
      continue;
    }
    for (const ContractFinding& f : r.findings) {
      const std::string where = f.clause + (f.mode.empty() ? "" : " (" + f.mode + ")");
      std::string before = "-";
      for (const ContractFinding& p : plain.findings)
        if (p.clause == f.clause && p.mode == f.mode) before = p.has_case ? std::to_string(p.cases_tried) : "static";
      if (f.has_case)
        std::snprintf(line, sizeof line, "  %-56s %-22s %8s %8d %7lld el %7d\n", g.target.c_str(),
                      where.c_str(), before.c_str(), f.cases_tried,
                      static_cast<long long>(case_numel(f.minimal)), f.shrink_steps);
      else
        std::snprintf(line, sizeof line, "  %-56s %-22s %8s %8s %10s %7s\n", g.target.c_str(),
                      where.c_str(), "static", "static", "-", "-");
      out << line;
    }
    const RunEntry entry{std::make_shared<const Contract>(contract), r, &g, ""};
    out << "  " << g.target << ": "
        << (regression_not_run(entry)       ? "not run"
            : caught_as_expected(entry)     ? "caught as expected"
                                            : "NOT as expected, expected " + join(g.expect))
        << " (" << (r.findings.empty() ? "nothing found" : "found " + join(found_clauses(r))) << ")\n";
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
    return cases_ * rate([&] {
      for (size_t i = 0; i < inputs.size(); ++i) {
        set_context(contract_, generated_[i], inputs[i].args);
        call_boxed(op_, inputs[i].args);
      }
    }, 1.0);
  }

  // Whole checked cases per second of `run_one` over freshly generated cases (generation
  // included).
  template <class F>
  double case_rate(F&& run_one) {
    return cases_ * rate([&] {
      rc::Random r(seed_);
      for (int i = 0; i < cases_; ++i) run_one(gen_(r.split(), i % 101).value());
    }, 1.0);
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

  // The real PyTorch's fake and compiled modes, after a warm-up pass over the same cases
  // (torch.compile compiles once per guard set; the count says how often).
  std::vector<std::string> pytorch(bool python, bool fake_runs, bool compiled_runs) {
    std::vector<std::string> lines;
    if (!python) lines.push_back("PyTorch's fake and torch.compile: not run (--no-python)");
    if (!python || !(fake_runs || compiled_runs) || !python_for_bench(lines)) return lines;
    char text[200];
    for (const bool symbolic : {false, true}) {
      if (!fake_runs) break;
      std::snprintf(text, sizeof text, "fake (PyTorch FakeTensorMode, %s sizes): %.0f cases/s",
                    symbolic ? "symbolic" : "static", case_rate([&](const Case& c) {
                      run_fake_pytorch(op_, contract_, c, CaseFacts(c, contract_), symbolic);
                    }));
      lines.push_back(text);
    }
    for (const char* backend : kTorchCompileBackends) {
      if (!compiled_runs) break;
      lines.push_back(torch_compile_line(backend));
    }
    return lines;
  }

  int64_t largest() const { return largest_; }

 private:
  std::string torch_compile_line(const char* backend) {
    int compilations = 0;
    auto one = [&](const Case& c) {
      compilations = run_torch_compile(op_, contract_, c, CaseFacts(c, contract_), backend, 0).compilations;
    };
    const auto t0 = Clock::now();
    for (const Case& c : generated_) one(c);
    const double warm_up = seconds_since(t0);
    char text[200];
    std::snprintf(text, sizeof text,
                  "compiled (torch.compile backend=%s, dynamic): %.0f cases/s after a %.1f s warm-up, "
                  "%d compilation(s)",
                  backend, case_rate(one), warm_up, compilations);
    return text;
  }

  const Contract& contract_;
  const OpBinding op_;
  const rc::Gen<Case> gen_;
  const int cases_;
  const uint64_t seed_;
  std::vector<Case> generated_;
  int64_t largest_ = 0;
};

// A mode's rate, or why it did not run.
void print_rate(std::ostream& out, const Contract& contract, Mode m, bool runs, double cases_per_s) {
  if (!runs) {
    out << to_string(m) << ": not run (" << contract.skip.at(m) << ")\n";
    return;
  }
  char line[160];
  std::snprintf(line, sizeof line, "%s: %.0f cases/s\n", to_string(m), cases_per_s);
  out << line;
}

}  // namespace

void run_bench(const Contract& contract, const std::string& target, int cases, uint64_t seed,
               bool python, std::ostream& out) {
  Bench bench(contract, target, cases, seed);
  const double bare = bench.bare();
  const double eager = bench.eager();
  const bool fake_runs = !contract.skip.count(Mode::Fake);
  const bool compiled_runs = !contract.skip.count(Mode::Compiled);
  const double fake = fake_runs ? bench.fake() : 0;
  const double compiled = compiled_runs ? bench.compiled() : 0;
  const std::vector<std::string> pytorch_lines = bench.pytorch(python, fake_runs, compiled_runs);

  char line[160];
  out << "bench " << contract.op << " -> " << target << ": " << cases << " generated cases, largest "
      << bench.largest() << " elements, seed " << seed << ", " << at::get_num_threads() << " thread(s)\n";
  std::snprintf(line, sizeof line, "bare: %.0f calls/s\neager: %.0f cases/s\nbare/eager: %.1f\n", bare, eager,
                bare / eager);
  out << line;
  print_rate(out, contract, Mode::Fake, fake_runs, fake);
  print_rate(out, contract, Mode::Compiled, compiled_runs, compiled);
  for (const std::string& l : pytorch_lines) out << l << "\n";
  std::pair<const char*, double> slowest{"eager", eager};
  if (fake_runs && fake < slowest.second) slowest = {"fake", fake};
  if (compiled_runs && compiled < slowest.second) slowest = {"compiled", compiled};
  std::snprintf(line, sizeof line, "slowest: %s %.0f cases/s\n", slowest.first, slowest.second);
  out << line;
  bench_regressions(contract, seed, std::min(cases, 1000), python, out);
}

}  // namespace opc::cli
