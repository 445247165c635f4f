#include "runners/bench.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "contracts/suggest.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/targeting.h"
#include "reports/run_report.h"
#include "runners/check_driver.h"
#include "runners/compiled_runner.h"
#include "runners/eager_runner.h"
#include "runners/fake_runner.h"
#include "runners/oracles/oracles.h"
#include "runners/python_bridge.h"
#include "runners/torch_compile_runner.h"

namespace opc {
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

}  // namespace

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

void run_bench(const Contract& contract, const std::string& target, int cases, uint64_t seed,
               bool python, std::ostream& out) {
  const SourceLoc& where = target == contract.port ? contract.port_loc : contract.op_loc;
  const OpBinding op = bind_op(target, target == contract.op ? contract.overload : "", where);
  auto contract_ptr = std::make_shared<const Contract>(contract);
  const rc::Gen<Case> gen = case_gen(contract_ptr);

  std::vector<Case> generated;
  rc::Random master(seed);
  for (int i = 0; i < cases; ++i) generated.push_back(gen(master.split(), i % 101).value());

  std::vector<Materialized> inputs;
  int64_t largest = 0;
  for (const Case& c : generated) {
    const CaseFacts facts(c, contract);
    inputs.push_back(materialize(c, contract, facts));
    largest = std::max(largest, case_numel(c));
  }
  const double bare = cases * rate([&] {
    for (size_t i = 0; i < inputs.size(); ++i) {
      set_context(contract, generated[i]);
      call_boxed(op, inputs[i].args);
    }
  }, 1.0);
  inputs.clear();

  // Cases per second of `run_one` over freshly generated cases (generation included).
  auto case_rate = [&](auto&& run_one) {
    return cases * rate([&] {
      rc::Random r(seed);
      for (int i = 0; i < cases; ++i) run_one(gen(r.split(), i % 101).value());
    }, 1.0);
  };
  const double eager = case_rate([&](const Case& c) {
    case_findings({op}, contract, c, CaseFacts(c, contract), {Mode::Eager}, nullptr);
  });
  // The fake and compiled modes' own cost (their oracles compare with the eager run a
  // check makes anyway): Meta tensors; clones, guard, copy-back and poisoned inputs.
  const bool fake_runs = !contract.skip.count(Mode::Fake);
  const double fake = !fake_runs ? 0 : case_rate([&](const Case& c) {
    run_fake_meta(op, contract, c, CaseFacts(c, contract));
  });
  const bool compiled_runs = !contract.skip.count(Mode::Compiled);
  const double compiled = !compiled_runs ? 0 : case_rate([&](const Case& c) {
    run_compiled(op, contract, c, CaseFacts(c, contract));
  });
  // The real PyTorch's fake and compiled modes, after a warm-up pass over the same cases
  // (torch.compile compiles once per guard set; the count says how often).
  std::vector<std::string> pytorch_lines;
  if (!python) pytorch_lines.push_back("PyTorch's fake and torch.compile: not run (--no-python)");
  else if ((fake_runs || compiled_runs) && python_for_bench(pytorch_lines)) {
    char text[200];
    for (const bool symbolic : {false, true}) {
      if (!fake_runs) break;
      std::snprintf(text, sizeof text, "fake (PyTorch FakeTensorMode, %s sizes): %.0f cases/s",
                    symbolic ? "symbolic" : "static", case_rate([&](const Case& c) {
                      run_fake_pytorch(op, contract, c, CaseFacts(c, contract), symbolic);
                    }));
      pytorch_lines.push_back(text);
    }
    for (const char* backend : kTorchCompileBackends) {
      if (!compiled_runs) break;
      int compilations = 0;
      auto one = [&](const Case& c) {
        compilations = run_torch_compile(op, contract, c, CaseFacts(c, contract), backend, 0).compilations;
      };
      const auto t0 = std::chrono::steady_clock::now();
      for (const Case& c : generated) one(c);
      const double warm_up = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::snprintf(text, sizeof text,
                    "compiled (torch.compile backend=%s, dynamic): %.0f cases/s after a %.1f s warm-up, "
                    "%d compilation(s)",
                    backend, case_rate(one), warm_up, compilations);
      pytorch_lines.push_back(text);
    }
  }

  char line[160];
  out << "bench " << contract.op << " -> " << target << ": " << cases
      << " generated cases, largest " << largest << " elements, seed " << seed << ", "
      << at::get_num_threads() << " thread(s)\n";
  std::snprintf(line, sizeof line, "bare: %.0f calls/s\neager: %.0f cases/s\nbare/eager: %.1f\n",
                bare, eager, bare / eager);
  out << line;
  if (fake_runs) {
    std::snprintf(line, sizeof line, "fake: %.0f cases/s\n", fake);
    out << line;
  } else {
    out << "fake: not run (" << contract.skip.at(Mode::Fake) << ")\n";
  }
  if (compiled_runs) {
    std::snprintf(line, sizeof line, "compiled: %.0f cases/s\n", compiled);
    out << line;
  } else {
    out << "compiled: not run (" << contract.skip.at(Mode::Compiled) << ")\n";
  }
  for (const std::string& l : pytorch_lines) out << l << "\n";
  std::pair<const char*, double> slowest{"eager", eager};
  if (fake_runs && fake < slowest.second) slowest = {"fake", fake};
  if (compiled_runs && compiled < slowest.second) slowest = {"compiled", compiled};
  std::snprintf(line, sizeof line, "slowest: %s %.0f cases/s\n", slowest.first, slowest.second);
  out << line;
  bench_regressions(contract, seed, std::min(cases, 1000), python, out);
}

}  // namespace opc
