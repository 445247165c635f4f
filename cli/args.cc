#include "cli/args.h"

#include <functional>
#include <sstream>

#include "cli/command.h"
#include "cli/fuzz_campaign.h"
#include "support/error_text.h"

namespace opc::cli {
namespace {

std::vector<Mode> parse_modes(const std::string& text) {
  std::vector<Mode> modes;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    const std::optional<Mode> m = mode_named(name);
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

double parse_time(const std::string& text) {
  try {
    return parse_duration(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--time: ") + e.what());
  }
}

// A flag: its name, and what it sets from its value ("" for a flag without one).
struct Flag {
  const char* name;
  bool takes_value;
  std::function<void(Args&, const std::string&)> set;
};

const Flag kFlags[] = {
    {"--load", true, [](Args& a, const std::string& v) { a.loads.push_back(v); }},
    {"--import", true, [](Args& a, const std::string& v) { a.imports.push_back(v); }},
    {"--no-python", false, [](Args& a, const std::string&) { a.python = false; }},
    {"--target", true, [](Args& a, const std::string& v) { a.target = v; }},
    {"--no-targeting", false, [](Args& a, const std::string&) { a.targeted = false; }},
    {"--no-misuse", false, [](Args& a, const std::string&) { a.misuse = false; }},
    {"--json", true, [](Args& a, const std::string& v) { a.json = v; }},
    {"--regressions", false, [](Args& a, const std::string&) { a.regressions = true; }},
    {"--no-isolation", false, [](Args& a, const std::string&) { a.isolate = false; }},
    {"--case-timeout", true, [](Args& a, const std::string& v) { a.case_timeout_s = parse_seconds("--case-timeout", v); }},
    {"--modes", true, [](Args& a, const std::string& v) { a.modes = parse_modes(v); }},
    {"--time", true, [](Args& a, const std::string& v) { a.time_s = parse_time(v); }},
    {"--shard", true, [](Args& a, const std::string& v) { parse_shard(v, a); }},
    {"--corpus", true, [](Args& a, const std::string& v) { a.corpus = v; }},
    {"--contract", true, [](Args& a, const std::string& v) { a.contract = v; }},
    {"--known", true, [](Args& a, const std::string& v) { a.known = v; }},
    {"--traffic", true, [](Args& a, const std::string& v) { a.traffic.push_back(v); }},
    {"--variant", true, [](Args& a, const std::string& v) {
       if (v.empty()) throw UsageError("--variant needs the words that name the build this run judges");
       a.variant = v;
     }},
    {"--update-known", false, [](Args& a, const std::string&) { a.update_known = true; }},
    {"--contracts", true, [](Args& a, const std::string& v) { a.contract_dirs.push_back(v); }},
    {"--out", true, [](Args& a, const std::string& v) { a.out = v; }},
    {"--update-table", true, [](Args& a, const std::string& v) { a.update_tables.push_back(v); }},
    {"--check-table", true, [](Args& a, const std::string& v) { a.check_tables.push_back(v); }},
    {"--cases", true, [](Args& a, const std::string& v) { a.cases = static_cast<int>(parse_number("--cases", v, 1, 10000000)); }},
    {"--seed", true, [](Args& a, const std::string& v) { a.seed = parse_number("--seed", v, 0, UINT64_MAX); }},
    {"--jobs", true, [](Args& a, const std::string& v) { a.jobs = static_cast<int>(parse_number("--jobs", v, 1, 1024)); }},
};

// Every command takes these.
const char* const kCommonFlags[] = {"--load", "--import", "--no-python"};

// The flag named `arg` when `command` takes it, else null.
const Flag* flag_for(const Command& command, const std::string& arg) {
  bool taken = std::find(std::begin(kCommonFlags), std::end(kCommonFlags), arg) != std::end(kCommonFlags) ||
               std::find(command.flags.begin(), command.flags.end(), arg) != command.flags.end();
  if (!taken) return nullptr;
  for (const Flag& f : kFlags)
    if (arg == f.name) return &f;
  return nullptr;
}

}  // namespace

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

CheckOptions check_options(const Args& a) {
  CheckOptions options;
  options.cases = a.cases;
  options.seed = a.seed;
  options.shard = a.shard;
  options.shards = a.shards;
  options.modes = a.modes;
  options.isolate = a.isolate;
  options.python = a.python;
  options.targeted = a.targeted;
  options.misuse = a.misuse;
  options.variant = a.variant;
  options.set_user_timeout(a.case_timeout_s);
  options.capture_output = !verbose_errors();  // --verbose: the op's and torch's output as it comes
  return options;
}

Args parse_args(const Command& command, int argc, char** argv) {
  Args a;
  a.command = command.name;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
    } else if (arg == "--verbose") {
      set_verbose_errors(true);
    } else if (const Flag* f = flag_for(command, arg)) {
      if (f->takes_value && i + 1 >= argc) throw UsageError(arg + " needs a value");
      f->set(a, f->takes_value ? argv[++i] : "");
    } else if (arg.rfind("--", 0) == 0) {
      throw UsageError("unknown option '" + arg + "' for " + a.command);
    } else {
      a.contracts.push_back(arg);
    }
  }
  if (!a.help && command.finish) command.finish(a);  // asked for the usage: nothing else matters
  return a;
}

}  // namespace opc::cli
