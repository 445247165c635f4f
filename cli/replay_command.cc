// `opcontract replay`: one case file run again (cli/replay.h).
#include <iostream>

#include "cli/command.h"
#include "cli/replay.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract replay CASE.yaml [--contract FILE] [--modes M,...] [--load LIB.so]...
                              [--case-timeout SECONDS] [--no-isolation]

  Runs one case file (from a corpus) again and prints what the op did.
)";

void finish(Args& a) {
  if (a.contracts.size() != 1) throw UsageError("replay needs exactly one CASE.yaml");
}

int run(const Args& a, const Session&) {
  ReplayOptions o;
  o.case_file = a.contracts[0];
  o.contract = a.contract;
  o.modes = a.modes;
  o.isolate = a.isolate;
  o.python = a.python;
  o.case_timeout_s = a.case_timeout_s;
  return run_replay(o, std::cout);
}

}  // namespace

Command replay_command() {
  return {"replay", kUsage, {"--no-isolation", "--case-timeout", "--modes", "--contract"}, finish, run};
}

}  // namespace opc::cli
