// `opcontract list`: the ops the --load libraries and --import modules register (or the
// bundled ports), each with the contracts covering it and where its fake comes from.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>

#include "cli/command.h"
#include "spec/contract_loader.h"
#include "spec/not_covered.h"
#include "reports/op_list.h"
#include "runners/op_binding.h"
#include "runners/python/bridge.h"
#include "support/error_text.h"
#include "support/names.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract list [--load LIB.so]... [--contracts DIR]...

  Lists the ops the --load libraries register (without --load: opcontract's bundled ports,
  namespaces opc_*), each with the contracts under DIR (default contracts/) that cover it,
  or the reason a DIR/NOT_COVERED file gives for leaving it out, or NO CONTRACT; under each,
  its registered schema.
)";

void finish(Args& a) {
  if (!a.contracts.empty()) throw UsageError("list takes no CONTRACT; --contracts DIR says where contracts live");
}

// The ops to list: those the --load libraries and --import modules added, or without
// them the bundled ports (namespaces opc_*).
std::vector<std::string> ops_to_list(const Args& a, const Session& session) {
  const bool bundled_only = a.loads.empty() && a.imports.empty();
  const std::set<std::string> before(session.ops_before_loads.begin(), session.ops_before_loads.end());
  std::vector<std::string> ops;
  for (const auto& name : registered_op_names()) {
    if (bundled_only ? name.rfind("opc_", 0) != 0 : before.count(name)) continue;
    // Importing a module can make torch define ops of its own (prims, ...): not the user's.
    if (!a.imports.empty() && python::defined_by_torch(name)) continue;
    ops.push_back(name);
  }
  return ops;
}

// Where each op's fake comes from, as PyTorch's FakeTensorMode sees it; empty, with a
// line saying why, without the embedded Python.
std::map<std::string, std::string> fake_sources(const std::vector<std::string>& ops) {
  std::map<std::string, std::string> fakes;
  if (!python::available()) {
    std::cout << "(where each op's fake comes from needs the embedded Python: " << python::unavailable_reason()
              << ")\n";
    return fakes;
  }
  for (const auto& op : ops) {
    try {
      fakes[op] = python::fake_source(op);
    } catch (const std::exception& e) {
      fakes[op] = "unknown: " + error_text(e);
    }
  }
  return fakes;
}

// Each op's registered schema, as a contract's `schema:` states it.
std::map<std::string, std::string> schemas_of(const std::vector<std::string>& ops) {
  std::map<std::string, std::string> schemas;
  for (const auto& op : ops) {
    const size_t dot = op.find('.', op.rfind("::"));
    const auto handle = c10::Dispatcher::singleton().findSchema(
        {op.substr(0, dot), dot == std::string::npos ? "" : op.substr(dot + 1)});
    // PyTorch prints the anonymous alias set of a `Tensor!` as `Tensor($0! -> )`: shown as written.
    static const std::regex anonymous_write(R"(\(\$\d+! -> \))");
    if (handle) schemas[op] = std::regex_replace(c10::toString(handle->schema()), anonymous_write, "!");
  }
  return schemas;
}

int run(const Args& a, const Session& session) {
  const std::vector<std::string> ops = ops_to_list(a, session);
  const std::vector<std::string> dirs = a.contract_dirs.empty() ? std::vector<std::string>{"contracts"} : a.contract_dirs;
  std::cout << (a.loads.empty() && a.imports.empty() ? "ops of opcontract's bundled ports (opc_*)"
                                                      : "ops the --load libraries and --import modules register")
            << ", and the contracts covering them:\n\n";
  const std::map<std::string, std::string> fakes = fake_sources(ops);
  const auto contracts = load_contract_dirs(dirs);
  print_op_list(std::cout, ops, contracts, join(dirs), fakes, not_covered(dirs, contracts), schemas_of(ops));
  return 0;
}

}  // namespace

Command list_command() {
  Command c{"list", kUsage, {"--contracts"}, finish, run};
  c.starts_python = true;  // to show Python-registered ops and where each fake comes from
  return c;
}

}  // namespace opc::cli
