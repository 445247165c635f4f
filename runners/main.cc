// The opcontract command line: check contracts, check their regressions, bench, list the
// registered ops and the contracts covering them, draft a contract from a schema.
//
// Exit codes: 0 everything holds (or every regression is caught as expected),
// 1 findings, 2 usage, contract or load errors.
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "contracts/contract_draft.h"
#include "contracts/contract_loader.h"
#include "contracts/suggest.h"
#include "reports/op_list.h"
#include "reports/run_report.h"
#include "runners/bench.h"
#include "runners/check_driver.h"
#include "runners/op_binding.h"

namespace {

const char* kUsage = R"(usage:
  opcontract check CONTRACT... [--target Q] [--regressions] [--load LIB.so]...
                               [--cases N] [--seed S] [--json FILE]
  opcontract bench CONTRACT... [--target Q] [--load LIB.so]... [--cases N] [--seed S]
  opcontract list [--load LIB.so]... [--contracts DIR]...
  opcontract draft QUALNAME[.OVERLOAD] [--load LIB.so]... [--out FILE]

check      checks each contract against its op: the contract's `op` when registered,
           else its `port` (opcontract's bundled port), or Q given with --target.
--regressions  checks each contract's listed regression targets instead; passes when each
           is caught by exactly the clauses it expects.
--load     loads an op library (dlopen) before checking; repeatable.
--cases    generated cases per contract (default 100; bench: 2000).
--seed     seed of the case generator (default 20261202): same seed, same cases.
--json     also writes the results as JSON (contract-format.md, "Results").
bench      prints the op's bare call rate and the checked-case rate on the same inputs, and
           per listed regression the cases until it is caught and the size of the shrunk case.
list       lists the ops the --load libraries register (without --load: opcontract's bundled
           ports, namespaces opc_*), each with the contracts under DIR (default contracts/)
           that cover it, or NO CONTRACT.
draft      writes a contract skeleton from the op's registered schema (stdout, or --out FILE,
           which must not exist yet).

exit: 0 holds, 1 findings, 2 usage / contract / load error.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command;
  std::vector<std::string> contracts, loads, contract_dirs;
  std::string target, json, out;
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
  if (a.command != "check" && a.command != "bench" && a.command != "list" && a.command != "draft")
    throw UsageError("unknown command '" + a.command + "' (commands: check, bench, list, draft)");
  const bool runs = a.command == "check" || a.command == "bench";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--target" && runs) a.target = value();
    else if (arg == "--load") a.loads.push_back(value());
    else if (arg == "--json" && a.command == "check") a.json = value();
    else if (arg == "--regressions" && a.command == "check") a.regressions = true;
    else if (arg == "--contracts" && a.command == "list") a.contract_dirs.push_back(value());
    else if (arg == "--out" && a.command == "draft") a.out = value();
    else if (arg == "--cases" && runs) a.cases = static_cast<int>(parse_number(arg, value(), 1, 10000000));
    else if (arg == "--seed" && runs) a.seed = parse_number(arg, value(), 0, UINT64_MAX);
    else if (arg.rfind("--", 0) == 0) throw UsageError("unknown option '" + arg + "' for " + a.command);
    else a.contracts.push_back(arg);
  }
  if (a.command == "list" && !a.contracts.empty())
    throw UsageError("list takes no CONTRACT; --contracts DIR says where contracts live");
  if (a.command == "draft" && a.contracts.size() != 1)
    throw UsageError("draft needs exactly one QUALNAME (ns::op or ns::op.overload)");
  if (runs && a.contracts.empty()) throw UsageError(a.command + " needs at least one CONTRACT.yaml");
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

void write_atomically(const std::string& flag, const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error(flag + " " + path + ": cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(flag + " " + path + ": cannot move " + tmp + " into place");
}

// Every *.yaml under the directories, loaded; one that does not load is reported and
// left out, so one bad file does not hide the rest.
std::vector<std::shared_ptr<const opc::Contract>> load_contract_dirs(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw UsageError("--contracts " + d + ": not a directory");
    for (const auto& e : fs::recursive_directory_iterator(d, ec))
      if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path().string());
    if (ec) throw std::runtime_error("--contracts " + d + ": " + ec.message());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::shared_ptr<const opc::Contract>> out;
  for (const auto& f : files) {
    try {
      out.push_back(std::make_shared<const opc::Contract>(opc::load_contract(f)));
    } catch (const opc::ContractError& e) {
      std::cerr << "opcontract: left out: " << e.what() << "\n";
    }
  }
  return out;
}

int run_list(const Args& a, const std::vector<std::string>& before_loads) {
  std::vector<std::string> ops;
  const std::set<std::string> before(before_loads.begin(), before_loads.end());
  for (const auto& name : opc::registered_op_names()) {
    const bool bundled = name.rfind("opc_", 0) == 0;
    if (a.loads.empty() ? bundled : !before.count(name)) ops.push_back(name);
  }
  const std::vector<std::string> dirs = a.contract_dirs.empty() ? std::vector<std::string>{"contracts"}
                                                                : a.contract_dirs;
  std::cout << (a.loads.empty() ? "ops of opcontract's bundled ports (opc_*)"
                                : "ops the --load libraries register")
            << ", and the contracts covering them:\n\n";
  opc::print_op_list(std::cout, ops, load_contract_dirs(dirs), opc::join(dirs));
  return 0;
}

int run_draft(const Args& a) {
  const std::string& q = a.contracts[0];
  const size_t ns = q.find("::");
  const size_t dot = q.find('.', ns == std::string::npos ? 0 : ns);
  const std::string name = q.substr(0, dot), overload = dot == std::string::npos ? "" : q.substr(dot + 1);
  if (ns == std::string::npos) throw UsageError("draft needs a qualified name like mylib::my_op, not '" + q + "'");
  const opc::OpBinding op = opc::bind_op(name, overload, {"<command line>", 0, 0});
  const std::string text = opc::draft_contract(name, op.handle.schema());
  if (a.out.empty()) {
    std::cout << text;
    return 0;
  }
  if (std::filesystem::exists(a.out)) throw UsageError("--out " + a.out + " exists; draft does not overwrite a contract");
  write_atomically("--out", a.out, text);
  std::cerr << "opcontract: wrote " << a.out << "\n";
  return 0;
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
  if (!a.json.empty()) write_atomically("--json", a.json, opc::json_report(run));
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
    const std::vector<std::string> before_loads = opc::registered_op_names();
    for (const auto& l : a.loads) load_library(l);
    if (a.command == "list") return run_list(a, before_loads);
    if (a.command == "draft") return run_draft(a);
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
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
    return 2;
  } catch (const opc::ContractError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "opcontract: error: " << e.what() << "\n";
    return 2;
  }
}
