// The opcontract command line: parses, dispatches to the command (cli/command.h) and
// turns what goes wrong into one line on stderr and an exit code.
#include <ATen/Parallel.h>

#include <iostream>

#include "cli/args.h"
#include "cli/command.h"
#include "cli/session.h"
#include "cli/usage.h"
#include "spec/source_loc.h"
#include "support/error_text.h"
#include "support/names.h"

namespace {

using opc::cli::Command;
using opc::cli::UsageError;

// The command argv[1] names; UsageError when none does.
const Command& command_named(int argc, char** argv) {
  if (argc < 2) throw UsageError("no command given");
  if (const Command* c = opc::cli::find_command(argv[1])) return *c;
  std::vector<std::string> names;
  for (const Command& c : opc::cli::commands()) names.push_back(c.name);
  throw UsageError(std::string("unknown command '") + argv[1] + "' (commands: " + opc::join(names) + ")");
}

// Runs the command; every error that escapes it is one line and exit 2.
int run(const Command& command, const opc::cli::Args& a, const char* self) {
  try {
    return command.run(a, opc::cli::open_session(a, command, self));
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
  } catch (const opc::ContractError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "opcontract: error: " << opc::error_text(e) << "\n";
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc >= 2 ? argv[1] : "";
  if (first == "--help" || first == "-h" || first == "help") {
    opc::cli::print_usage(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << opc::cli::version_text() << "\n";
    return 0;
  }
  const Command* command = nullptr;
  opc::cli::Args a;
  try {
    command = &command_named(argc, argv);
    a = opc::cli::parse_args(*command, argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "opcontract: " << e.what() << "\n\n";
    opc::cli::print_usage(std::cerr, command ? command->name : "");
    return 2;
  }
  if (a.help) {
    opc::cli::print_usage(std::cout, a.command);
    return 0;
  }
  // One core: results and speed do not depend on the machine's thread count.
  at::set_num_threads(1);
  return run(*command, a, argv[0]);
}
