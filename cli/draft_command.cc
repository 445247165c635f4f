// `opcontract draft`: a contract skeleton from an op's registered schema.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "spec/contract_draft.h"
#include "generators/traffic_draft.h"
#include "support/names.h"
#include "runners/op_binding.h"
#include "support/atomic_file.h"

namespace opc::cli {
namespace {

const char* kUsage = R"(  opcontract draft QUALNAME[.OVERLOAD] [--load LIB.so]... [--out FILE] [--traffic RECORDING]...

  Writes a contract skeleton from the op's registered schema (stdout, or --out FILE, which
  must not exist yet). With --traffic, from the op's calls in the recordings
  (python -m opcontract.record): its dims, dtypes, layouts and scalars as the program passed
  them.
)";

void finish(Args& a) {
  if (a.contracts.size() != 1) throw UsageError("draft needs exactly one QUALNAME (ns::op or ns::op.overload)");
}

int run(const Args& a, const Session&) {
  const std::string& q = a.contracts[0];
  const size_t ns = q.find("::");
  const size_t dot = q.find('.', ns == std::string::npos ? 0 : ns);
  const std::string name = q.substr(0, dot), overload = dot == std::string::npos ? "" : q.substr(dot + 1);
  if (ns == std::string::npos) throw UsageError("draft needs a qualified name like mylib::my_op, not '" + q + "'");
  const OpBinding op = bind_op(name, overload, {"<command line>", 0, 0});
  std::string text;
  if (a.traffic.empty()) {
    text = draft_contract(name, op.handle.schema());
  } else {
    const auto calls = load_recordings(a.traffic);
    if (!calls) return 2;
    if (std::none_of(calls->begin(), calls->end(), [&](const RecordedCall& c) { return c.op == name; }))
      throw UsageError("no call of " + name + " in " + join(a.traffic) + ": `opcontract admit` lists the ops recorded");
    text = draft_from_traffic(name, op.handle.schema(), *calls);
  }
  if (a.out.empty()) {
    std::cout << text;
    return 0;
  }
  if (std::filesystem::exists(a.out)) throw UsageError("--out " + a.out + " exists; draft does not overwrite a contract");
  write_file_atomically(a.out, text);
  std::cerr << "opcontract: wrote " << a.out << "\n";
  return 0;
}

}  // namespace

Command draft_command() { return {"draft", kUsage, {"--out", "--traffic"}, finish, run}; }

}  // namespace opc::cli
