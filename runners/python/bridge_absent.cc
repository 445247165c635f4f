// A build without an embedded Python (see bridge.h): every check that needs it
// reports not run with this reason.
#include <stdexcept>

#include "runners/python/bridge.h"

namespace opc::python {
namespace {

const char* kReason =
    "this opcontract was built without an embedded Python (its LibTorch is not a Python "
    "wheel's, or libpython was not found): build it against the torch of a Python venv "
    "(scripts/setup does by default; OPCONTRACT_PYTHON=/path/to/venv/bin/python for yours)";

[[noreturn]] void refuse() { throw std::runtime_error(kReason); }

}  // namespace

bool available() { return false; }
std::string unavailable_reason() { return kReason; }
void start() { refuse(); }
void warm_up_compile() { refuse(); }
void flush_output() {}
std::string take_startup_output() { return ""; }
bool cuda_initialized() { return false; }
void before_fork() {}
void after_fork_parent() {}
void after_fork_child() {}
void import_module(const std::string&) { refuse(); }
std::string fake_kind(const std::string&) { refuse(); }
std::string fake_source(const std::string&) { refuse(); }
bool defined_by_torch(const std::string&) { refuse(); }
std::string installed_version(const std::string&) { refuse(); }
std::vector<std::string> loaded_libraries(const std::string&) { refuse(); }
std::vector<std::string> python_registered_ops() { refuse(); }
void set_context(const std::string&, const std::map<std::string, int64_t>&) { refuse(); }
void set_state_hook_clock(std::function<void(bool)>) {}
void build_state(const std::string&, const StateCase&, const c10::FunctionSchema&,
                 const std::map<int, std::string>&, std::vector<c10::IValue>&) {
  refuse();
}
std::string define_python_reference(const std::string&, const std::string&) { refuse(); }
FakeResult fake_call(const OpBinding&, const std::vector<c10::IValue>&, bool, const std::vector<std::string>&) {
  refuse();
}
CompiledResult compiled_call(const OpBinding&, const std::vector<c10::IValue>&, const std::string&,
                             const std::string&, int, const std::vector<std::string>&) {
  refuse();
}
std::vector<std::string> compiled_graphs(const OpBinding&, const std::string&) { refuse(); }
std::string compile_cache_dir() { refuse(); }

}  // namespace opc::python
