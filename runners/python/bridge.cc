// The embedded interpreter (see bridge.h). Tensors cross without copies: torch's own
// conversions (toPyObject / toIValue) wrap the same TensorImpl on both sides.
#include <Python.h>  // before any standard header, as CPython asks
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "runners/python/bridge.h"
#include "support/error_text.h"
#include "support/output_capture.h"

namespace py = pybind11;

namespace opc::python {
namespace {

bool g_started = false;
std::string g_unavailable = "the embedded Python has not been started";
PyThreadState* g_main_thread = nullptr;  // the released GIL of the main thread
PyGILState_STATE g_fork_gil{};
py::module_* g_bridge = nullptr;         // leaked on purpose: never destroyed after finalisation
std::string g_startup_output;            // what start(), warm_up_compile() and imports printed
std::function<void(bool)> g_state_hook_clock;  // set_state_hook_clock's

// Runs `f` with this process's output caught into g_startup_output, unless verbose: torch's
// import-time warnings are not the run's news.
template <class F>
void quietly(F&& f) {
  if (verbose_errors()) return f();
  OutputCapture capture;
  capture.redirect();
  try {
    f();
  } catch (...) {
    flush_output();
    capture.restore();
    g_startup_output += capture.take();
    throw;
  }
  flush_output();
  capture.restore();
  g_startup_output += capture.take();
}

// The Python half, installed beside the binary (share/opcontract/python) or in the source tree.
std::string bridge_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = self.parent_path().parent_path() / "share" / "opcontract" / "python";
    if (fs::exists(installed / "opcontract_bridge.py", ec)) return installed.string();
  }
  return OPC_BRIDGE_SOURCE_DIR;
}

// A Python exception, as "doing: TypeName: message" (no traceback: the message is what
// a user acts on). Called with the GIL held.
std::runtime_error python_error(const std::string& doing, const py::error_already_set& e) {
  const std::string type = py::str(e.type().attr("__name__"));
  return std::runtime_error(doing + ": " + type + ": " + std::string(py::str(e.value())));
}

py::module_& bridge() {
  if (!g_started) throw std::runtime_error(g_unavailable);
  return *g_bridge;
}

// Calls the bridge's Python function `function` with the GIL held and hands its result,
// still under the GIL, to `convert`; a Python exception becomes python_error(doing, ...).
// The one way this file calls into Python.
template <class Convert, class... Args>
auto call_with(const char* function, const std::string& doing, Convert&& convert, Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    return convert(bridge().attr(function)(std::forward<Args>(args)...));
  } catch (const py::error_already_set& e) {
    throw python_error(doing, e);
  }
}

// The same, its result cast to R (void: dropped).
template <class R, class... Args>
R call(const char* function, const std::string& doing, Args&&... args) {
  return call_with(function, doing, [](const py::object& out) {
    if constexpr (!std::is_void_v<R>) return out.cast<R>();
  }, std::forward<Args>(args)...);
}

py::list to_python(const std::vector<c10::IValue>& args) {
  py::list out;
  for (const c10::IValue& a : args) out.append(torch::jit::toPyObject(a));
  return out;
}

// "torch.float32" -> Float, through torch's own dtype objects.
c10::ScalarType dtype_of(const std::string& name) {
  const py::object dtype = py::module_::import("torch").attr(name.substr(name.find('.') + 1).c_str());
  if (!THPDtype_Check(dtype.ptr())) throw std::runtime_error("not a torch dtype: " + name);
  return reinterpret_cast<THPDtype*>(dtype.ptr())->scalar_type;
}

FakeTensor fake_tensor(const py::dict& d) {
  FakeTensor t;
  t.is_tensor = d.contains("sizes");
  if (!t.is_tensor) return t;
  t.sizes = d["sizes"].cast<std::vector<int64_t>>();
  t.strides = d["strides"].cast<std::vector<int64_t>>();
  t.storage_offset = d["storage_offset"].cast<int64_t>();
  t.dtype = dtype_of(d["dtype"].cast<std::string>());
  if (d.contains("aliases_arg")) t.aliases_arg = d["aliases_arg"].cast<int>();
  if (d.contains("aliases_return")) t.aliases_return = d["aliases_return"].cast<int>();
  if (d.contains("is_arg")) t.is_arg = d["is_arg"].cast<int>();
  return t;
}

std::string overload_of(const OpBinding& op) { return op.handle.operator_name().overload_name; }
std::string qualname_of(const OpBinding& op) { return op.handle.operator_name().name; }

}  // namespace

bool available() { return g_started; }
std::string unavailable_reason() { return g_started ? "" : g_unavailable; }

namespace {

// start(), before its output is caught.
void start_interpreter() {
  // Before torch is imported: importing inductor sets TORCHINDUCTOR_CACHE_DIR to its default.
  const std::string cache = compile_cache_dir();
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // Ctrl-C and SIGTERM stay opcontract's
  config.parse_argv = 0;
  // The interpreter of the venv the LibTorch came from, so that its site-packages (torch,
  // vLLM) are the ones imported, and torch's libraries are the ones already loaded here.
  const std::string python = OPC_PYTHON_EXECUTABLE;
  PyStatus status = PyConfig_SetBytesString(&config, &config.executable, python.c_str());
  if (!PyStatus_Exception(status))
    status = PyConfig_SetBytesString(&config, &config.program_name, python.c_str());
  if (PyStatus_Exception(status)) {
    PyConfig_Clear(&config);
    g_unavailable = "the embedded Python could not be configured for " + python;
    throw std::runtime_error(g_unavailable);
  }
  try {
    py::initialize_interpreter(&config, 0, nullptr, false);
  } catch (const std::exception& e) {
    g_unavailable = std::string("the embedded Python (") + python + ") did not start: " + e.what();
    throw std::runtime_error(g_unavailable);
  }
  try {
    // The bridge, and the working directory as `python -c` has it (--import my_ops).
    py::list path = py::module_::import("sys").attr("path");
    path.insert(0, bridge_dir());
    path.insert(1, "");
    g_bridge = new py::module_(py::module_::import("opcontract_bridge"));
    g_bridge->attr("use_compile_cache")(cache);
  } catch (const py::error_already_set& e) {
    g_unavailable = "the embedded Python (" + python + ") could not import torch and the bridge: " + e.what();
    throw std::runtime_error(g_unavailable);
  }
  g_started = true;
  g_unavailable.clear();
  g_main_thread = PyEval_SaveThread();  // other calls take the GIL when they need it
}

}  // namespace

void start() {
  if (g_started) return;
  quietly(start_interpreter);
}

void warm_up_compile() {
  static bool warm = false;
  if (warm) return;
  quietly([] { call<void>("warm_up", "warming up torch.compile"); });
  warm = true;
}

void flush_output() {
  if (!g_started || !Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  try {
    py::module_ sys = py::module_::import("sys");
    for (const char* stream : {"stdout", "stderr"})
      if (py::object s = sys.attr(stream); !s.is_none()) s.attr("flush")();
  } catch (const py::error_already_set&) {
    // A stream that cannot flush has nothing more to give.
  }
}

std::string take_startup_output() {
  std::string out;
  out.swap(g_startup_output);
  return out;
}

bool cuda_initialized() {
  return g_started && call<bool>("cuda_initialized", "asking torch whether CUDA is initialised");
}

void before_fork() {
  if (!g_started) return;
  g_fork_gil = PyGILState_Ensure();
  PyOS_BeforeFork();
}

void after_fork_parent() {
  if (!g_started) return;
  PyOS_AfterFork_Parent();
  PyGILState_Release(g_fork_gil);
}

void after_fork_child() {
  if (!g_started) return;
  PyOS_AfterFork_Child();
  // The forking thread's state is the child's only one now, kept: releasing it as the
  // parent does would delete it when a thread other than the main one forked (`check
  // --jobs`), and the child's next call into Python would die ("init_threadstate: thread
  // state already initialized"). So only the GIL is released.
  if (g_fork_gil == PyGILState_UNLOCKED) PyEval_SaveThread();
}

void import_module(const std::string& name) {
  quietly([&] { call<void>("import_module", "--import " + name, name); });
}

std::string fake_kind(const std::string& qualname) {
  return call<std::string>("op_fake_kind", "the fake of " + qualname, qualname);
}

std::string fake_source(const std::string& qualname) {
  return call<std::string>("op_fake_source", "the fake of " + qualname, qualname);
}

bool defined_by_torch(const std::string& qualname) {
  return call<bool>("defined_by_torch", "where " + qualname + " was defined", qualname);
}

std::string installed_version(const std::string& dist) {
  return call<std::string>("installed_version", "the version of " + dist, dist);
}

std::vector<std::string> loaded_libraries(const std::string& dist) {
  return call<std::vector<std::string>>("loaded_libraries", "the libraries of " + dist, dist);
}

std::vector<std::string> python_registered_ops() {
  return call<std::vector<std::string>>("python_registered_ops", "listing Python-registered ops");
}

void set_context(const std::string& hook, const std::map<std::string, int64_t>& values) {
  call<void>("set_context", "the contract's python_context hook " + hook, hook, values);
}

void set_state_hook_clock(std::function<void(bool)> clock) { g_state_hook_clock = std::move(clock); }

void build_state(const std::string& hook, const StateCase& c, const c10::FunctionSchema& schema,
                 const std::map<int, std::string>& wanted, std::vector<c10::IValue>& args) {
  py::gil_scoped_acquire gil;
  py::dict state;
  struct Clocked {  // the hook's time, told to whoever keeps the op's time limit
    Clocked() { if (g_state_hook_clock) g_state_hook_clock(true); }
    ~Clocked() { if (g_state_hook_clock) g_state_hook_clock(false); }
  };
  try {
    const Clocked clocked;
    state = bridge().attr("build_state")(hook, c.values, c.arg_names, to_python(args), c.seed);
  } catch (const py::error_already_set& e) {
    if (e.matches(bridge().attr("NotCalledHere"))) throw CaseDeclined(py::str(e.value()).cast<std::string>());
    throw StateHookError(python_error("the contract's python_state hook " + hook, e).what());
  }
  for (const auto& [index, key] : wanted) {
    if (!state.contains(key)) {
      std::string keys;
      for (const auto& kv : state) keys += (keys.empty() ? "" : ", ") + std::string(py::str(kv.first));
      throw std::runtime_error("the contract's python_state hook " + hook + " returned no '" + key +
                               "' for argument '" + c.arg_names.at(index) + "' (it returned: " +
                               (keys.empty() ? "nothing" : keys) + ")");
    }
    try {
      args.at(index) = torch::jit::toIValue(state[key.c_str()], schema.arguments().at(index).type());
    } catch (const std::exception& e) {
      throw std::runtime_error("the contract's python_state hook " + hook + " returned, under '" + key +
                               "', no " + schema.arguments().at(index).type()->str() + ": " + e.what());
    }
  }
}

std::string define_python_reference(const std::string& function, const std::string& schema) {
  return call<std::string>("define_python_reference", "registering the Python reference " + function, function, schema);
}

FakeResult fake_call(const OpBinding& op, const std::vector<c10::IValue>& args, bool symbolic,
                     const std::vector<std::string>& devices) {
  py::gil_scoped_acquire gil;  // for the arguments' Python objects
  py::dict on;  // only the arguments moved off their own device
  for (size_t i = 0; i < devices.size(); ++i)
    if (!devices[i].empty()) on[py::int_(i)] = devices[i];
  const auto read = [](const py::object& out) {
    const py::dict d = out.cast<py::dict>();
    FakeResult r;
    r.ok = d["ok"].cast<bool>();
    r.error = d["error"].cast<std::string>();
    r.fake_kind = d["fake_kind"].cast<std::string>();
    for (const py::handle ret : d["returns"]) r.returns.push_back(fake_tensor(ret.cast<py::dict>()));
    for (const py::handle a : d["args_after"]) {
      const py::dict ad = a.cast<py::dict>();
      r.args_after[ad["arg"].cast<int>()] = fake_tensor(ad);
    }
    r.symbolic_dims = static_cast<int>(py::len(d["symbolic_dims"]));
    return r;
  };
  return call_with("fake_call", "the fake mode's call of " + op.name, read, qualname_of(op), overload_of(op),
                   to_python(args), symbolic, py::none(), on);
}

CompiledResult compiled_call(const OpBinding& op, const std::vector<c10::IValue>& args,
                             const std::string& backend, const std::string& context, int budget,
                             const std::vector<std::string>& reaches) {
  py::gil_scoped_acquire gil;  // for the arguments' Python objects
  const auto read = [&op](const py::object& out) {
    const py::dict d = out.cast<py::dict>();
    CompiledResult r;
    r.ok = d["ok"].cast<bool>();
    r.error = d["error"].cast<std::string>();
    r.compilations = d["compilations"].cast<int>();
    r.skipped = d["skipped"].cast<bool>();
    r.compiled = d["compiled"].cast<bool>();
    const auto& returns = op.handle.schema().returns();
    size_t i = 0;
    for (const py::handle v : d["returns"]) {
      const c10::TypePtr type = i < returns.size() ? returns[i].type() : c10::AnyType::get();
      r.returns.push_back(v.is_none() ? c10::IValue() : torch::jit::toIValue(v, type));
      ++i;
    }
    return r;
  };
  return call_with("compiled_call", "the compiled mode's call of " + op.name, read, qualname_of(op), overload_of(op),
                   to_python(args), backend, true, context, budget, reaches);
}

std::vector<std::string> compiled_graphs(const OpBinding& op, const std::string& backend) {
  return call<std::vector<std::string>>("compiled_graphs", "the compiled graphs of " + op.name, qualname_of(op),
                                        overload_of(op), backend);
}

std::string compile_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  if (std::string dir = env("OPCONTRACT_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string dir = env("TORCHINDUCTOR_CACHE_DIR"); !dir.empty()) return dir;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  // A build tree's binary (scripts/setup's build/, ctest's): the cache goes with the build.
  if (!ec && fs::exists(self.parent_path() / "CMakeCache.txt", ec))
    return (self.parent_path() / "compile-cache").string();
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/opcontract";
  return env("HOME").empty() ? "/tmp/opcontract-cache" : env("HOME") + "/.cache/opcontract";
}

}  // namespace opc::python
