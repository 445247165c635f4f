"""The fake mode once per class: an op's fake traced symbolically once, answered per case.

A fake's answer (sizes, strides, storage offsets, dtypes, aliasing) is a function of its
inputs' metadata within the guards its symbolic trace records. ``opcontract_bridge.fake_call``
asks this module first: ``FakeClasses.answer`` finds a trace of the op whose guards and
concrete sizes the case meets and evaluates the trace's answer at the case's sizes, as the
static fake or as the symbolic one, in microseconds instead of a FakeTensorMode run (3 to
15 ms). Where none fits, ``fake_call`` runs the fakes for real and hands the symbolic run to
``FakeClasses.learn``, which keeps it for the cases after, compared with the static run of
the same case (``ran_static``).

A class is what a trace cannot see through: the op, each argument's dtype, rank, device,
None-ness and storage sharing, what PyTorch keeps concrete in its sizes (sizes, strides and
offsets of 0 and 1; which strides follow from the sizes), the scalar arguments' values, the
contract's context values (set_context) and the dims left static. Within a class each
trace is a region: its guards (a size a fake pins) and the symbols' ranges; at most
``TRACES_PER_CLASS`` regions a class, as a compile keeps a bounded number of graphs.

Where the static fake still runs for real, every case (it can disagree with the symbolic
trace only where the fake reads a size without a guard, or where the trace fails):
  - a trace that raised (its message names the case's sizes, so it is not reused either);
  - a trace that asked the ShapeEnv for a size's value without a guard (``size_hint``,
    ``optimization_hint``: kernels' tuning tables);
  - a trace whose static answer on its own case differed from the real static fake's;
  - a class whose static fake finds something on every case (the checker then skips the
    symbolic run, so nothing is traced: a fake wrong on static sizes costs what it did);
  - ops taking tensor lists (their tensors share one source name).
Not seen by a trace: a fake reading a SymInt's hint directly (``optimization_hint(s)``),
process state that a python_state hook built, or an opaque argument's contents (vLLM's
LayerName; the class holds its type only). vLLM's fakes of its stateful ops read none of
these: they return nothing or tensors shaped like their inputs. The static fake runs for
real on a trace's 3rd, 30th and 300th reuse as a spot check, and a class where it disagrees
is retired (the unit tests plant such a fake).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch
from torch._dynamo.source import AttrSource, LocalSource, TensorProperty, TensorPropertySource
from torch.utils._pytree import tree_leaves

TRACES_PER_CLASS = 8
SPOT_CHECKS = (3, 30, 300)  # the reuses of a trace on which the static fake runs for real

# What a tensor argument's metadata is made of, as the trace's positions name it.
_SIZE, _STRIDE, _OFFSET = "size", "stride", "offset"


@dataclass
class _Trace:
    """One symbolic run of a fake: where it holds and what it answered, as expressions."""

    # (arg, on the base?, property, dim, expression or int) for every input's metadata.
    positions: list[tuple[int, bool, str, int, Any]]
    # Each symbol and where a case's value for it is read.
    sources: dict[sympy.Symbol, tuple[int, bool, str, int]]
    ranges: dict[sympy.Symbol, Any]
    guards: list[sympy.Basic]
    # fake_call's result, its ints replaced by expressions where they were symbolic.
    answer: dict
    static_differs: bool = False
    reuses: int = 0


@dataclass
class _Class:
    traces: list[_Trace] = field(default_factory=list)
    retired: bool = False  # full: every case runs the fakes for real


class FakeClasses:
    """The traces of every class met in this process; see the module's docstring."""

    def __init__(self) -> None:
        self._classes: dict[tuple, _Class] = {}
        self.context: dict[str, tuple] = {}  # set_context: hook ("" for C++ ops) -> its values
        self._static: tuple = (None, None, None)  # ran_static's last case

    def key(self, qualname: str, overload: str, args: list, dynamic_dims: dict | None,
            devices: dict | None = None) -> tuple | None:
        """The case's class, or None where its answers are not reused."""
        parts: list = [qualname, overload, tuple(self.context.items()), repr(dynamic_dims),
                       repr(sorted((devices or {}).items()))]
        storages: list[int] = []
        for a in args:
            if isinstance(a, torch.Tensor):
                storage = a.untyped_storage()._cdata
                if storage not in storages:
                    storages.append(storage)
                parts.append((a.dtype, a.device, a.dim(), a.requires_grad, storages.index(storage),
                              _shape_pattern(a), a._base is not None and _shape_pattern(a._base)))
            elif any(isinstance(t, torch.Tensor) for t in tree_leaves(a)):
                return None
            else:
                parts.append(_value_key(a))
        return tuple(parts)

    def answer(self, key: tuple | None, args: list, symbolic: bool,
               run_static: Callable[[], dict]) -> dict | None:
        """The answer of a trace of ``key``'s class that covers ``args``, or None.

        ``run_static`` runs the real static fake on the case, for the spot checks.
        """
        cls = self._classes.get(key) if key is not None else None
        if cls is None:
            return None
        for trace in cls.traces:
            values = _bind(trace, args)
            if values is None:
                continue
            if not symbolic and trace.static_differs:
                return None
            known = _evaluate(trace.answer, values, symbolic)
            trace.reuses += not symbolic
            if not symbolic and trace.reuses in SPOT_CHECKS:
                static = run_static()
                if static != known:  # the fake reads sizes the trace did not see it read
                    cls.traces, cls.retired = [], True
                    return static
            return known
        return None

    def ran_static(self, key: tuple | None, args: list, result: dict) -> None:
        """Notes the real static fake's result on a case, for learn to compare on that case."""
        self._static = (key, _metadata(args), result)

    def learn(self, key: tuple | None, args: list, fakes: list, outputs: list, shape_env,
              result: dict, read_hints: bool) -> None:
        """Keeps a symbolic run for ``key``: its result, input fakes, returned leaves, ShapeEnv.

        A trace whose static answer differs from the real static fake's on the same case
        (ran_static) answers the symbolic mode only.
        """
        if key is None or not result["ok"] or read_hints:
            return
        cls = self._classes.setdefault(key, _Class())
        if cls.retired:
            return
        trace = _trace_of(fakes, outputs, shape_env, result)
        values = _bind(trace, args) if trace is not None else None
        if values is None:
            return
        static_key, metadata, static = self._static
        if (static_key, metadata) == (key, _metadata(args)):
            trace.static_differs = _evaluate(trace.answer, values, False) != static
        else:  # no static run of this case to compare with
            trace.static_differs = True
        cls.traces.append(trace)
        cls.retired = len(cls.traces) >= TRACES_PER_CLASS


_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _value_key(a: Any) -> tuple:
    """A non-tensor argument's part of the class: its value, or an opaque object's type.

    An opaque object (vLLM's LayerName, made afresh per case) has no value a fake could
    branch on that the class could name; the spot checks cover a fake that reads through it.
    """
    leaves = tree_leaves(a)
    if all(isinstance(v, _PLAIN) for v in leaves):
        return type(a).__name__, repr(a)
    return type(a).__name__, tuple(type(v).__qualname__ for v in leaves)


def _shape_pattern(t: torch.Tensor) -> tuple:
    """What PyTorch keeps concrete when it makes a fake's sizes symbols: sizes, strides and
    offsets of 0 and 1, and which strides follow from the sizes inside them (contiguous)."""
    small = lambda v: v if v < 2 else 2  # noqa: E731
    inner = [t.stride(d) == t.stride(d + 1) * t.size(d + 1) for d in range(t.dim() - 1)]
    return (tuple(map(small, t.shape)), tuple(map(small, t.stride())), small(t.storage_offset()),
            tuple(inner))


def _metadata(args: list) -> tuple:
    return tuple((tuple(a.shape), a.stride(), a.storage_offset()) if isinstance(a, torch.Tensor) else None
                 for a in args)


def _trace_of(fakes: list, outputs: list, shape_env, result: dict) -> _Trace | None:
    sources: dict[sympy.Symbol, tuple[int, bool, str, int]] = {}
    for symbol, where in shape_env.var_to_sources.items():
        place = next((p for p in map(_place, where) if p is not None), None)
        if place is None:
            return None  # a symbol no argument's metadata names
        sources[symbol] = place
    positions = []
    for i, f in enumerate(fakes):
        if not isinstance(f, torch.Tensor):
            continue
        for on_base, t in ((False, f), (True, f._base)):
            if t is None:
                continue
            positions += [(i, on_base, _SIZE, d, _expr(s)) for d, s in enumerate(t.shape)]
            positions += [(i, on_base, _STRIDE, d, _expr(s)) for d, s in enumerate(t.stride())]
            positions.append((i, on_base, _OFFSET, 0, _expr(t.storage_offset())))
    guards = [g.expr for g in shape_env.guards]
    known = set(sources)
    if any(not e.free_symbols <= known for e in guards):
        return None
    # A symbol's own place needs no check; the ranges as ints, for speed.
    positions = [p for p in positions if sources.get(p[4]) != p[:4]]
    ranges = {s: (int(r.lower) if r.lower.is_Integer else -math.inf,
                  int(r.upper) if r.upper.is_Integer else math.inf)
              for s, r in shape_env.var_to_range.items() if s in known}
    return _Trace(positions, sources, ranges, guards, _symbolic_answer(fakes, outputs, result))


def _place(source) -> tuple[int, bool, str, int] | None:
    """Where a case's value of a symbol made from ``source`` is read, if from an argument."""
    if not isinstance(source, TensorPropertySource):
        return None
    base, on_base = source.base, False
    if isinstance(base, AttrSource) and base.member == "_base":
        base, on_base = base.base, True
    if not isinstance(base, LocalSource) or not base.local_name.startswith("arg"):
        return None
    arg = int(base.local_name[3:])
    prop = {TensorProperty.SIZE: _SIZE, TensorProperty.STRIDE: _STRIDE,
            TensorProperty.STORAGE_OFFSET: _OFFSET}[source.prop]
    return arg, on_base, prop, source.idx or 0


def _read(args: list, place: tuple[int, bool, str, int]) -> int | None:
    arg, on_base, prop, dim = place
    t = args[arg]._base if on_base else args[arg]
    if t is None:
        return None
    if prop == _SIZE:
        return t.size(dim) if dim < t.dim() else None
    if prop == _STRIDE:
        return t.stride(dim) if dim < t.dim() else None
    return t.storage_offset()


def _bind(trace: _Trace, args: list) -> dict | None:
    """The case's value of every symbol of ``trace``, if the case lies in its region."""
    values = {}
    for symbol, place in trace.sources.items():
        v = _read(args, place)
        if v is None or not trace.ranges[symbol][0] <= v <= trace.ranges[symbol][1]:
            return None
        values[symbol] = sympy.Integer(v)
    for arg, on_base, prop, dim, e in trace.positions:
        v = _read(args, (arg, on_base, prop, dim))
        if v is None or _value(e, values) != v:
            return None
    if not all(bool(g.xreplace(values)) for g in trace.guards):
        return None
    return values


def _expr(v) -> Any:
    return v.node.expr if isinstance(v, torch.SymInt) else v


def _value(e: Any, values: dict) -> int:
    """``e`` at the case's sizes; -1 for a size the fake made data-dependent (unbacked)."""
    if not isinstance(e, sympy.Basic):
        return e
    v = e.xreplace(values)
    return int(v) if v.is_number else -1


def _symbolic_answer(fakes: list, outputs: list, result: dict) -> dict:
    """``result`` with every returned and after-call size, stride and offset an expression.

    Each returned tensor also says which dims are data-dependent (``unbacked``: no hint),
    the only ones a static fake reports as symbolic.
    """
    answer = {**result, "returns": []}
    for r, out in zip(result["returns"], outputs):
        if r["is_tensor"]:
            r = {**r, **_meta_exprs(out), "unbacked": [isinstance(s, torch.SymInt) and s.node.hint is None
                                                       for s in out.shape]}
        elif isinstance(out, torch.SymInt):  # an int the op computes from sizes
            r = {**r, "value": _expr(out)}
        answer["returns"].append(r)
    answer["args_after"] = [{**a, **_meta_exprs(fakes[a["arg"]])} for a in result["args_after"]]
    return answer


def _meta_exprs(t: torch.Tensor) -> dict:
    return {"sizes": [_expr(s) for s in t.shape], "strides": [_expr(s) for s in t.stride()],
            "storage_offset": _expr(t.storage_offset())}


def _evaluate(answer: dict, values: dict, symbolic: bool) -> dict:
    """``answer`` at the case's sizes, as the symbolic or the static fake reports it."""
    def meta(m: dict) -> dict:
        return {**m, "sizes": [_value(e, values) for e in m["sizes"]],
                "strides": [_value(e, values) for e in m["strides"]],
                "storage_offset": _value(m["storage_offset"], values)}

    result = {**answer, "args_after": [meta(a) for a in answer["args_after"]], "returns": []}
    for r in answer["returns"]:
        if r["is_tensor"]:
            r = meta(r)
            unbacked = r.pop("unbacked")
            if not symbolic:  # statically, only a data-dependent size is still a symbol
                r["symbolic"] = unbacked
        elif isinstance(r["value"], sympy.Basic):
            r = {**r, "value": _value(r["value"], values)}
        result["returns"].append(r)
    if not symbolic:
        result["symbolic_dims"], result["specialized_dims"] = [], []
    return result
