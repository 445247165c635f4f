// `opcontract bench`: the checker's own speed against the op's (cli/bench.h).
#include <iostream>

#include "cli/bench.h"
#include "cli/command.h"
#include "runners/op_binding.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract bench CONTRACT... [--target Q] [--load LIB.so]... [--cases N] [--seed S]

  Prints the op's bare call rate and the checked-case rate on the same inputs (default
  2000 cases), and per listed regression the cases until it is caught and the size of the
  shrunk case.
)";

void finish(Args& a) {
  if (a.contracts.empty()) throw UsageError("bench needs at least one CONTRACT.yaml");
  if (a.cases < 0) a.cases = 2000;
}

int run(const Args& a, const Session&) {
  const auto contracts = load_contracts(a.contracts);
  if (!contracts) return 2;
  for (const auto& c : *contracts) run_bench(*c, target_name(*c, a.target), a.cases, a.seed, a.python, std::cout);
  return 0;
}

}  // namespace

Command bench_command() {
  return {"bench", kUsage, {"--target", "--no-targeting", "--cases", "--seed"}, finish, run};
}

}  // namespace opc::cli
