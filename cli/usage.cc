#include "cli/usage.h"

#include "cli/command.h"

namespace opc::cli {
namespace {

const char* kEveryCommand = R"(
Every command takes -h/--help (its usage) and --verbose (an internal error's message with
PyTorch's C++ backtrace; also OPCONTRACT_VERBOSE=1). opcontract --version prints the version
and the LibTorch it was built against. Every command that takes --load also takes
--import MODULE (repeatable: a Python module whose ops and fakes to register, e.g.
vllm._custom_ops; needs the embedded Python) and --no-python (the C++ paths only: the
fake mode on C++ Meta kernels, opcontract's model of torch.compile, no interpreter).
check and fuzz take --no-targeting: plain generation, without steering towards unhit
branches, unmade in-place uses and unseen layout pairs; and --no-misuse: no caller's
mistakes (a wrong size, rank, dtype, layout or index) made of every fourth case.
exit: 0 holds, 1 findings, 2 usage / contract / load error.
)";

}  // namespace

void print_usage(std::ostream& out, const std::string& command) {
  out << "usage:\n";
  for (const Command& c : commands()) {
    if (!command.empty() && command != c.name) continue;
    out << c.usage;
    if (command.empty()) out << "\n";
  }
  out << kEveryCommand;
}

std::string version_text() {
  return std::string("opcontract ") + OPC_VERSION + ", built against LibTorch " + OPC_TORCH_VERSION +
         " (" + OPC_TORCH_FLAVOUR + "), " +
         (OPC_EMBEDS_PYTHON ? std::string("embedding Python ") + OPC_PYTHON_VERSION : "without Python");
}

}  // namespace opc::cli
