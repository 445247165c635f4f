// The command line as parsed. Every command takes -h/--help, --verbose, --load, --import
// and --no-python; the others it lists itself (cli/command.h), and a flag another command
// takes is "unknown option '--json' for fuzz" here.
//
//   const Args a = parse_args(command, argc, argv);   // throws UsageError
//   a.contracts   // the words that are not flags: contract files, case files, a QUALNAME
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/options.h"
#include "spec/contract.h"

namespace opc::cli {

// A command line that makes no sense: exit 2 with the command's usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command;
  std::vector<std::string> contracts, loads, imports, contract_dirs;
  bool python = true;         // --no-python: the C++ paths only, no interpreter
  bool targeted = true;       // --no-targeting: plain generation
  bool misuse = true;         // --no-misuse: no caller's mistakes made of the cases
  std::string target, json, out;
  // report --update-table / --check-table FILE:BLOCK (reports/results_table.h)
  std::vector<std::string> update_tables, check_tables;
  bool regressions = false;
  bool isolate = true;
  double case_timeout_s = 0;  // 0: not given
  double time_s = 0;          // fuzz --time
  int shard = 0, shards = 1;
  std::string corpus, contract;
  std::string known;          // --known FILE (the expected-failures ratchet)
  std::string variant;        // check --variant TEXT: which build of the target this run judges
  std::vector<std::string> traffic;  // check --traffic RECORDING: its admitted calls run first
  bool update_known = false;
  bool help = false;          // -h/--help after the command: its usage
  std::vector<Mode> modes;
  int cases = -1;             // -1: not given; each command has its default
  int jobs = 0;               // check --jobs: checks side by side (0: not given)
  uint64_t seed = kDefaultSeed;
};

struct Command;
// Parses argv[2...] for `command` (argv[1]); then, unless -h/--help was given, lets the
// command check the arguments as a whole and set its defaults.
Args parse_args(const Command& command, int argc, char** argv);

// The options of a check that the command line gives: cases, seed, shard, modes,
// isolation and its time limit, Python, targeting.
CheckOptions check_options(const Args& a);

// The value parsers, each a UsageError naming the flag on bad text.
uint64_t parse_number(const std::string& flag, const std::string& text, uint64_t min, uint64_t max);
double parse_seconds(const std::string& flag, const std::string& text);

}  // namespace opc::cli
