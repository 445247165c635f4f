// The commands of the opcontract command line, each defined in its own file
// (cli/<name>_command.cc) with its usage text, the flags it takes, the checks of its
// arguments as a whole and what it runs. main() parses, dispatches and turns errors into
// exit codes; nothing else.
//
//   const Command* c = find_command("check");
//   int exit_code = c->run(args, session);
//
// Exit codes: 0 everything holds (or every regression is caught as expected),
// 1 findings, 2 usage, contract or load errors; fuzz also 130 when stopped early.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/session.h"

namespace opc::cli {

struct Command {
  const char* name;
  const char* usage;                       // printed by `opcontract NAME --help`
  std::vector<std::string> flags;          // beyond -h, --verbose, --load, --import, --no-python
  std::function<void(Args&)> finish;       // checks the arguments as a whole, sets defaults
  std::function<int(const Args&, const Session&)> run;
  bool starts_python = false;              // needs the embedded Python even without --import
};

Command check_command();
Command fuzz_command();
Command replay_command();
Command bench_command();
Command list_command();
Command draft_command();
Command report_command();
Command admit_command();

// Every command, in the order the usage lists them.
const std::vector<Command>& commands();
// The command named `name`, or null.
const Command* find_command(const std::string& name);

}  // namespace opc::cli
