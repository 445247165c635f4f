#include "cli/command.h"

namespace opc::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {check_command(), fuzz_command(),  replay_command(), bench_command(),
                                           list_command(),  draft_command(), report_command(),
                                           admit_command()};
  return all;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace opc::cli
