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
#include <sstream>
#include <csignal>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "contracts/contract_draft.h"
#include "contracts/contract_loader.h"
#include "contracts/suggest.h"
#include "reports/atomic_file.h"
#include "reports/campaign_report.h"
#include "reports/known_file.h"
#include "reports/op_list.h"
#include "reports/run_report.h"
#include "runners/bench.h"
#include "runners/check_driver.h"
#include "runners/error_text.h"
#include "runners/fuzz_campaign.h"
#include "runners/op_binding.h"
#include "runners/python_bridge.h"
#include "runners/replay.h"

namespace {

// Each command's usage, printed by `opcontract COMMAND --help`; all of them by --help.
struct CommandHelp {
  const char* name;
  const char* text;
};

const CommandHelp kCommands[] = {
    {"check", R"(  opcontract check CONTRACT... [--target Q] [--regressions] [--load LIB.so]...
                               [--cases N] [--seed S] [--json FILE]
                               [--case-timeout SECONDS] [--no-isolation]
                               [--known FILE [--update-known]] [--modes M,...]

  Checks each contract against its op: the contract's `op` when registered, else its
  `port` (opcontract's bundled port), or Q given with --target.
  --regressions  checks each contract's listed regression targets instead; passes when each
             is caught by exactly the clauses it expects.
  --load     loads an op library (dlopen) before checking; repeatable.
  --cases    generated cases per contract (default 100).
  --seed     seed of the case generator (default 20261202): same seed, same cases.
  --json     also writes the results as JSON (contract-format.md, "Results").
  --case-timeout  seconds one case may take, all modes together (default: the contract's
             time_limit, else 10); an op past it is killed and reported as a crash.
  --no-isolation  runs the op in this process instead of a forked worker (for a debugger):
             a crash of the op then ends the run.
  --known    an expected-failures file (JSON): a finding it lists for the contract and target
             is known (xfail), a new one fails, a listed one not found fails (xpass).
  --update-known  rewrites that file from this run's findings (listed reasons kept).
  --modes    the modes to run besides eager, e.g. fake,compiled (default: the contract's).
)"},
    {"fuzz", R"(  opcontract fuzz CONTRACT... (--time DUR | --cases N) --out DIR [--corpus DIR] [--seed S]
                              [--shard I/N] [--modes M,...] [--target Q] [--load LIB.so]...
                              [--case-timeout SECONDS] [--no-isolation] [--known FILE]

  A campaign: per contract, replays the corpus (DIR/<contract>/*.yaml) first, then runs
  generated cases until --time (90s, 15m, 2h) or --cases is spent; --shard I/N runs the
  cases i with i % N == I of the same sequence, so shards merged (report) find what one run
  finds. Each new finding is saved into the corpus at once; the progress (state) and the
  results so far are saved every few seconds, so rerunning the same command resumes within
  seconds of where it stopped, even after a SIGKILL. Ctrl-C stops cleanly (exit 130).
)"},
    {"replay", R"(  opcontract replay CASE.yaml [--contract FILE] [--modes M,...] [--load LIB.so]...
                              [--case-timeout SECONDS] [--no-isolation]

  Runs one case file (from a corpus) again and prints what the op did.
)"},
    {"bench", R"(  opcontract bench CONTRACT... [--target Q] [--load LIB.so]... [--cases N] [--seed S]

  Prints the op's bare call rate and the checked-case rate on the same inputs (default
  2000 cases), and per listed regression the cases until it is caught and the size of the
  shrunk case.
)"},
    {"list", R"(  opcontract list [--load LIB.so]... [--contracts DIR]...

  Lists the ops the --load libraries register (without --load: opcontract's bundled ports,
  namespaces opc_*), each with the contracts under DIR (default contracts/) that cover it,
  or NO CONTRACT.
)"},
    {"draft", R"(  opcontract draft QUALNAME[.OVERLOAD] [--load LIB.so]... [--out FILE]

  Writes a contract skeleton from the op's registered schema (stdout, or --out FILE, which
  must not exist yet).
)"},
    {"report", R"(  opcontract report RESULTS.json... --out DIR

  Merges `check --json` result files (shards, runners, --regressions runs) and writes
  DIR/summary.md, junit.xml, index.html and badges/<op>.{svg,json}; exit 0 once written,
  findings or not, 2 on a bad result file or DIR.
)"},
};

const char* kEveryCommand = R"(
Every command takes -h/--help (its usage) and --verbose (an internal error's message with
PyTorch's C++ backtrace; also OPCONTRACT_VERBOSE=1). opcontract --version prints the version
and the LibTorch it was built against. Every command that takes --load also takes
--import MODULE (repeatable: a Python module whose ops and fakes to register, e.g.
vllm._custom_ops; needs the embedded Python) and --no-python (the C++ paths only: the
fake mode on C++ Meta kernels, opcontract's model of torch.compile, no interpreter).
check and fuzz take --no-targeting: plain generation, without steering towards unhit
branches, unmade in-place uses and unseen layout pairs.
exit: 0 holds, 1 findings, 2 usage / contract / load error.
)";

void print_usage(std::ostream& out, const std::string& command = "") {
  out << "usage:\n";
  for (const CommandHelp& c : kCommands) {
    if (!command.empty() && command != c.name) continue;
    out << c.text;
    if (command.empty()) out << "\n";
  }
  out << kEveryCommand;
}

std::string version_text() {
  return std::string("opcontract ") + OPC_VERSION + ", built against LibTorch " + OPC_TORCH_VERSION +
         " (" + OPC_TORCH_FLAVOUR + "), " +
         (OPC_EMBEDS_PYTHON ? std::string("embedding Python ") + OPC_PYTHON_VERSION : "without Python");
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command;
  std::vector<std::string> contracts, loads, imports, contract_dirs;
  bool python = true;         // --no-python: the C++ paths only, no interpreter
  bool targeted = true;       // --no-targeting: plain generation
  std::string target, json, out;
  bool regressions = false;
  bool isolate = true;
  double case_timeout_s = 0;  // 0: not given
  double time_s = 0;          // fuzz --time
  int shard = 0, shards = 1;
  std::string corpus, contract;
  std::string known;          // --known FILE (the expected-failures ratchet)
  bool update_known = false;
  bool help = false;          // -h/--help after the command: its usage
  std::vector<opc::Mode> modes;
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

double parse_seconds(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !(v > 0 && v <= 86400))
    throw UsageError(flag + " needs a number of seconds above 0 and at most 86400, not '" + text + "'");
  return v;
}

std::vector<opc::Mode> parse_modes(const std::string& text) {
  std::vector<opc::Mode> modes;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    auto m = opc::parse_mode(name);
    if (!m) throw UsageError("--modes: unknown mode '" + name + "' (modes: fake, eager, compiled, cudagraph)");
    modes.push_back(*m);
  }
  if (modes.empty()) throw UsageError("--modes needs a comma-separated list of modes");
  return modes;
}

// "I/N" with 0 <= I < N.
void parse_shard(const std::string& text, Args& a) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw UsageError("--shard needs I/N (e.g. 0/4), not '" + text + "'");
  a.shards = static_cast<int>(parse_number("--shard's N", text.substr(slash + 1), 1, 100000));
  a.shard = static_cast<int>(parse_number("--shard's I", text.substr(0, slash), 0, a.shards - 1));
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) throw UsageError("no command given");
  a.command = argv[1];
  std::vector<std::string> commands;
  for (const CommandHelp& c : kCommands) commands.push_back(c.name);
  if (std::find(commands.begin(), commands.end(), a.command) == commands.end())
    throw UsageError("unknown command '" + a.command + "' (commands: " + opc::join(commands) + ")");
  const bool runs = a.command == "check" || a.command == "bench" || a.command == "fuzz";
  const bool isolates = a.command == "check" || a.command == "fuzz" || a.command == "replay";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") a.help = true;
    else if (arg == "--verbose") opc::set_verbose_errors(true);
    else if (arg == "--target" && runs) a.target = value();
    else if (arg == "--load") a.loads.push_back(value());
    else if (arg == "--import") a.imports.push_back(value());
    else if (arg == "--no-python") a.python = false;
    else if (arg == "--no-targeting" && runs) a.targeted = false;
    else if (arg == "--json" && a.command == "check") a.json = value();
    else if (arg == "--regressions" && a.command == "check") a.regressions = true;
    else if (arg == "--no-isolation" && isolates) a.isolate = false;
    else if (arg == "--case-timeout" && isolates) a.case_timeout_s = parse_seconds(arg, value());
    else if (arg == "--modes" && (isolates)) a.modes = parse_modes(value());
    else if (arg == "--time" && a.command == "fuzz") {
      try {
        a.time_s = opc::parse_duration(value());
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--time: ") + e.what());
      }
    }
    else if (arg == "--shard" && a.command == "fuzz") parse_shard(value(), a);
    else if (arg == "--corpus" && a.command == "fuzz") a.corpus = value();
    else if (arg == "--contract" && a.command == "replay") a.contract = value();
    else if (arg == "--known" && (a.command == "check" || a.command == "fuzz")) a.known = value();
    else if (arg == "--update-known" && a.command == "check") a.update_known = true;
    else if (arg == "--contracts" && a.command == "list") a.contract_dirs.push_back(value());
    else if (arg == "--out" && (a.command == "draft" || a.command == "report" || a.command == "fuzz")) a.out = value();
    else if (arg == "--cases" && runs) a.cases = static_cast<int>(parse_number(arg, value(), 1, 10000000));
    else if (arg == "--seed" && runs) a.seed = parse_number(arg, value(), 0, UINT64_MAX);
    else if (arg.rfind("--", 0) == 0) throw UsageError("unknown option '" + arg + "' for " + a.command);
    else a.contracts.push_back(arg);
  }
  if (a.help) return a;  // asked for the usage: nothing else matters
  if (a.command == "list" && !a.contracts.empty())
    throw UsageError("list takes no CONTRACT; --contracts DIR says where contracts live");
  if (a.command == "draft" && a.contracts.size() != 1)
    throw UsageError("draft needs exactly one QUALNAME (ns::op or ns::op.overload)");
  if (runs && a.contracts.empty()) throw UsageError(a.command + " needs at least one CONTRACT.yaml");
  if (a.command == "report" && (a.contracts.empty() || a.out.empty()))
    throw UsageError("report needs at least one RESULTS.json (from check --json) and --out DIR");
  if (a.command == "fuzz" && (a.out.empty() || (a.time_s == 0 && a.cases < 0)))
    throw UsageError("fuzz needs --out DIR and --time DUR or --cases N");
  if (a.update_known && a.known.empty()) throw UsageError("--update-known needs --known FILE");
  if (a.command == "replay" && a.contracts.size() != 1)
    throw UsageError("replay needs exactly one CASE.yaml");
  if (a.regressions && !a.target.empty())
    throw UsageError("--regressions checks the targets the contract lists; drop --target");
  if (a.cases < 0) a.cases = a.command == "bench" ? 2000 : a.command == "fuzz" ? 0 : 100;
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

// The flags of this run that the replay commands it prints need: --load, --import, and
// those that change which cases are drawn or how they run.
std::string library_flags(const Args& a) {
  std::string flags;
  for (const auto& l : a.loads) flags += " --load " + quote(l);
  for (const auto& m : a.imports) flags += " --import " + quote(m);
  if (!a.python) flags += " --no-python";
  if (!a.targeted) flags += " --no-targeting";
  return flags;
}

// The embedded Python, for --import and for list's Python-registered ops and fakes (the
// checks start it themselves when their fake or compiled mode runs). A build without one,
// or --no-python, runs on: what needs it reports not run, with the reason.
void start_python(const Args& a) {
  if (!a.python || (a.imports.empty() && a.command != "list")) return;
  try {
    opc::python::start();
  } catch (const std::exception& e) {
    if (!a.imports.empty()) throw UsageError(std::string("--import needs the embedded Python: ") + e.what());
    if (OPC_EMBEDS_PYTHON) std::cerr << "opcontract: warning: " << e.what() << "\n";
  }
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

std::atomic<bool> g_stop{false};

// Ctrl-C (or a CI runner's SIGTERM) ends a campaign after the case in flight; a second
// one ends the process.
void on_stop_signal(int sig) {
  g_stop = true;
  std::signal(sig, SIG_DFL);
}

int run_fuzz(const Args& a, const std::vector<std::shared_ptr<const opc::Contract>>& contracts,
             const char* self) {
  const std::string loads = library_flags(a);
  opc::FuzzOptions o;
  o.target = a.target;
  o.cases = a.cases;
  o.seconds = a.time_s;
  o.seed = a.seed;
  o.shard = a.shard;
  o.shards = a.shards;
  o.corpus_dir = a.corpus;
  o.out_dir = a.out;
  o.modes = a.modes;
  o.isolate = a.isolate;
  o.python = a.python;
  o.targeted = a.targeted;
  o.case_timeout_s = a.case_timeout_s;
  o.stop = &g_stop;
  if (!a.known.empty()) o.known = opc::load_known_file(a.known);
  o.replay_base = quote(self) + " check" + loads;
  o.case_replay_base = quote(self) + " replay" + loads;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  return opc::run_fuzz_campaign(contracts, o, std::cout);
}

int run_list(const Args& a, const std::vector<std::string>& before_loads) {
  std::vector<std::string> ops;
  const std::set<std::string> before(before_loads.begin(), before_loads.end());
  for (const auto& name : opc::registered_op_names()) {
    const bool bundled = name.rfind("opc_", 0) == 0;
    if (a.loads.empty() && a.imports.empty() ? bundled : !before.count(name)) {
      // Importing a module can make torch define ops of its own (prims, ...): not the user's.
      if (!a.imports.empty() && opc::python::defined_by_torch(name)) continue;
      ops.push_back(name);
    }
  }
  const std::vector<std::string> dirs = a.contract_dirs.empty() ? std::vector<std::string>{"contracts"}
                                                                : a.contract_dirs;
  std::cout << (a.loads.empty() && a.imports.empty() ? "ops of opcontract's bundled ports (opc_*)"
                                : "ops the --load libraries and --import modules register")
            << ", and the contracts covering them:\n\n";
  // Where each op's fake comes from, as PyTorch's FakeTensorMode sees it.
  std::map<std::string, std::string> fakes;
  if (opc::python::available()) {
    for (const auto& op : ops) {
      try {
        fakes[op] = opc::python::fake_source(op);
      } catch (const std::exception& e) {
        fakes[op] = "unknown: " + opc::error_text(e);
      }
    }
  } else {
    std::cout << "(where each op's fake comes from needs the embedded Python: "
              << opc::python::unavailable_reason() << ")\n";
  }
  opc::print_op_list(std::cout, ops, load_contract_dirs(dirs), opc::join(dirs), fakes);
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
  opc::write_file_atomically(a.out, text);
  std::cerr << "opcontract: wrote " << a.out << "\n";
  return 0;
}

int run_check(const Args& a, const std::vector<std::shared_ptr<const opc::Contract>>& contracts,
              const char* self) {
  opc::CheckOptions options;
  options.cases = a.cases;
  options.seed = a.seed;
  options.isolate = a.isolate;
  options.python = a.python;
  options.targeted = a.targeted;
  options.modes = a.modes;
  options.set_user_timeout(a.case_timeout_s);
  // Long runs say how far they are: one updating line on a terminal, a line a second in CI.
  const bool tty = isatty(STDERR_FILENO);
  options.progress = [tty, total = a.cases](const opc::ContractResult& r, double rate) {
    std::fprintf(stderr, "%s[opcontract] %s: %d/%d cases, %.0f cases/s, %zu finding(s)%s",
                 tty ? "\r" : "", r.target.c_str(), r.cases, total, rate, r.findings.size(),
                 tty ? "" : "\n");
  };
  const std::string loads = library_flags(a);
  std::vector<opc::RunEntry> run;
  const std::vector<opc::KnownEntry> known = a.known.empty() ? std::vector<opc::KnownEntry>{}
                                                              : opc::load_known_file(a.known);
  auto add = [&](const std::shared_ptr<const opc::Contract>& c, const std::string& target,
                 const opc::Regression* regression) {
    opc::RunEntry e;
    e.contract = c;
    e.regression = regression;
    options.known = opc::known_for(known, c->file, target);
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
  if (!a.json.empty()) opc::write_file_atomically(a.json, opc::json_report(run));
  if (a.update_known) {
    const std::vector<opc::KnownEntry> now = opc::updated_known(known, run);
    opc::write_known_file(a.known, now);
    std::cout << "rewrote " << a.known << ": " << now.size() << " known finding(s)\n";
  }
  for (const auto& e : run)
    if (e.result.verdict == "error") std::cerr << "opcontract: error: " << e.result.error << "\n";
  return errors ? 2 : bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc >= 2 ? argv[1] : "";
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << version_text() << "\n";
    return 0;
  }
  Args a;
  try {
    a = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n\n";
    const bool known = std::any_of(std::begin(kCommands), std::end(kCommands),
                                   [&](const CommandHelp& c) { return first == c.name; });
    print_usage(std::cerr, known ? first : "");
    return 2;
  }
  if (a.help) {
    print_usage(std::cout, a.command);
    return 0;
  }
  // One core: results and speed do not depend on the machine's thread count.
  at::set_num_threads(1);
  try {
    start_python(a);
    const std::vector<std::string> before_loads = opc::registered_op_names();
    for (const auto& l : a.loads) load_library(l);
    for (const auto& m : a.imports) opc::python::import_module(m);
    if (a.command == "list") return run_list(a, before_loads);
    if (a.command == "draft") return run_draft(a);
    if (a.command == "replay") {
      opc::ReplayOptions o;
      o.case_file = a.contracts[0];
      o.contract = a.contract;
      o.modes = a.modes;
      o.isolate = a.isolate;
      o.python = a.python;
      o.case_timeout_s = a.case_timeout_s;
      return opc::run_replay(o, std::cout);
    }
    if (a.command == "report") {
      opc::write_campaign_report(opc::read_campaign(a.contracts), a.out);
      std::cerr << "opcontract: wrote " << a.out << "/{summary.md,junit.xml,index.html,badges/}\n";
      return 0;
    }
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
        opc::run_bench(*c, opc::target_name(*c, a.target), a.cases, a.seed, a.python, std::cout);
      return 0;
    }
    if (a.command == "fuzz") return run_fuzz(a, contracts, argv[0]);
    return run_check(a, contracts, argv[0]);
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
    return 2;
  } catch (const opc::ContractError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "opcontract: error: " << opc::error_text(e) << "\n";
    return 2;
  }
}
