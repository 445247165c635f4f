// The opcontract command line: check contracts, check their regressions, bench.
//
// Exit codes: 0 everything holds (or every regression is caught as expected),
// 1 findings, 2 usage, contract or load errors.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "contracts/contract_loader.h"
#include "reports/run_report.h"
#include "runners/bench.h"
#include "runners/check_driver.h"
#include "runners/op_binding.h"

namespace {

const char* kUsage = R"(usage:
  opcontract check CONTRACT... [--target Q] [--regressions] [--load LIB.so]...
                               [--cases N] [--seed S] [--json FILE]
  opcontract bench CONTRACT... [--target Q] [--load LIB.so]... [--cases N] [--seed S]

check      checks each contract against its op: the contract's `op` when registered,
           else its `port` (opcontract's bundled port), or Q given with --target.
--regressions  checks each contract's listed regression targets instead; passes when each
           is caught by exactly the clauses it expects.
--load     loads an op library (dlopen) before checking; repeatable.
--cases    generated cases per contract (default 100; bench: 2000).
--seed     seed of the case generator (default 20261202): same seed, same cases.
--json     also writes the results as JSON (contract-format.md, "Results").
bench      prints the op's bare call rate and the checked-case rate on the same inputs.

exit: 0 holds, 1 findings, 2 usage / contract / load error.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command;
  std::vector<std::string> contracts, loads;
  std::string target, json;
  bool regressions = false;
  int cases = -1;
  uint64_t seed = opc::kDefaultSeed;
};

uint64_t parse_number(const std::string& flag, const std::string& text, uint64_t min, uint64_t max) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || text[0] == '-' || v < min || v > max)
    throw UsageError(flag + " needs a number from " + std::to_string(min) + " to " + std::to_string(max) + ", not '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) throw UsageError("no command given");
  a.command = argv[1];
  if (a.command != "check" && a.command != "bench")
    throw UsageError("unknown command '" + a.command + "' (commands: check, bench)");
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--target") a.target = value();
    else if (arg == "--load") a.loads.push_back(value());
    else if (arg == "--json" && a.command == "check") a.json = value();
    else if (arg == "--regressions" && a.command == "check") a.regressions = true;
    else if (arg == "--cases") a.cases = static_cast<int>(parse_number(arg, value(), 1, 10000000));
    else if (arg == "--seed") a.seed = parse_number(arg, value(), 0, UINT64_MAX);
    else if (arg.rfind("--", 0) == 0) throw UsageError("unknown option '" + arg + "' for " + a.command);
    else a.contracts.push_back(arg);
  }
  if (a.contracts.empty()) throw UsageError(a.command + " needs at least one CONTRACT.yaml");
  if (a.regressions && !a.target.empty())
    throw UsageError("--regressions checks the targets the contract lists; drop --target");
  if (a.cases < 0) a.cases = a.command == "bench" ? 2000 : 100;
  return a;
}

void load_library(const std::string& path) {
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
    throw std::runtime_error("--load " + path + ": cannot load it as a shared library: " + dlerror());
}

std::string quote(const std::string& s) {
  if (s.find_first_of(" \t'\"$\\") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("--json " + path + ": cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("--json " + path + ": cannot move " + tmp + " into place");
}

int run_check(const Args& a, const std::vector<std::shared_ptr<const opc::Contract>>& contracts,
              const char* self) {
  opc::CheckOptions options;
  options.cases = a.cases;
  options.seed = a.seed;
  // Long runs say how far they are: one updating line on a terminal, a line a second in CI.
  const bool tty = isatty(STDERR_FILENO);
  options.progress = [tty, total = a.cases](const opc::ContractResult& r, double rate) {
    std::fprintf(stderr, "%s[opcontract] %s: %d/%d cases, %.0f cases/s, %zu finding(s)%s",
                 tty ? "\r" : "", r.target.c_str(), r.cases, total, rate, r.findings.size(),
                 tty ? "" : "\n");
  };
  std::string loads;
  for (const auto& l : a.loads) loads += " --load " + quote(l);
  std::vector<opc::RunEntry> run;
  auto add = [&](const std::shared_ptr<const opc::Contract>& c, const std::string& target,
                 const opc::Regression* regression) {
    opc::RunEntry e;
    e.contract = c;
    e.regression = regression;
    e.result = opc::check_contract(*c, target, options);
    if (tty && e.result.cases >= 64) std::fprintf(stderr, "\r\033[K");
    e.replay_base = quote(self) + " check " + quote(c->file) + " --target " + quote(target) + loads;
    run.push_back(std::move(e));
  };
  for (const auto& c : contracts) {
    if (!a.regressions) {
      add(c, opc::target_name(*c, a.target), nullptr);
      continue;
    }
    if (c->regressions.empty())
      std::cout << "\n== " << c->op << ": no regressions listed in " << c->file << "\n";
    for (const auto& r : c->regressions) add(c, r.target, &r);
  }
  opc::print_text_report(std::cout, run);
  int ok = 0, bad = 0, errors = 0, not_run = 0;
  for (const auto& e : run) {
    if (e.result.verdict == "error") ++errors;
    else if (opc::regression_not_run(e)) ++not_run;
    else if (opc::entry_ok(e)) ++ok;
    else ++bad;
  }
  std::cout << "\n" << (a.regressions ? "regressions caught as expected: " : "contracts holding: ")
            << ok << "/" << run.size();
  if (not_run) std::cout << " (" << not_run << " not run)";
  if (errors) std::cout << " (" << errors << " error" << (errors > 1 ? "s" : "") << ")";
  std::cout << "\n";
  // ctest reads this line as a skip (SKIP_REGULAR_EXPRESSION), so a GPU-only check shows
  // as skipped, with its reason above, rather than as passed.
  if (not_run && not_run == static_cast<int>(run.size()))
    std::cout << "SKIPPED: no regression could be judged on this machine\n";
  if (!a.json.empty()) write_atomically(a.json, opc::json_report(run));
  for (const auto& e : run)
    if (e.result.verdict == "error") std::cerr << "opcontract: error: " << e.result.error << "\n";
  return errors ? 2 : bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "help")) {
    std::cout << kUsage;
    return 0;
  }
  Args a;
  try {
    a = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n\n" << kUsage;
    return 2;
  }
  // One core: results and speed do not depend on the machine's thread count.
  at::set_num_threads(1);
  try {
    for (const auto& l : a.loads) load_library(l);
    std::vector<std::shared_ptr<const opc::Contract>> contracts;
    int bad = 0;
    for (const auto& path : a.contracts) {
      try {
        contracts.push_back(std::make_shared<const opc::Contract>(opc::load_contract(path)));
      } catch (const opc::ContractError& e) {
        std::cerr << e.what() << "\n";
        ++bad;
      }
    }
    if (bad) return 2;
    if (a.command == "bench") {
      for (const auto& c : contracts)
        opc::run_bench(*c, opc::target_name(*c, a.target), a.cases, a.seed, std::cout);
      return 0;
    }
    return run_check(a, contracts, argv[0]);
  } catch (const std::exception& e) {
    std::cerr << "opcontract: error: " << e.what() << "\n";
    return 2;
  }
}
