"""Records the custom-op calls a Python program makes, with each call's argument geometry.

What it is for: run a real program (a vLLM serve, a test, a benchmark) and see which custom
ops (any namespace but torch's own: ``aten``, ``prims``, ``prim``, ``profiler``, ``mkldnn``, ``onednn``,
``quantized``, ``inductor``) it calls, from where, how often, and with what
arguments: each tensor's dtype, shape, strides, storage offset, which arguments share a
buffer, alignment, contiguity, device and (integer/bool tensors) the range of its values;
each scalar's value. A contract's cases can then be checked against what is really called.

Use::

    from opcontract import record
    with record.recording("calls.jsonl", program="my test"):    # a context manager
        ...
    record.start("calls.jsonl", program=None); ...; record.stop()  # the same, by hand

    python -m opcontract.record --out calls.jsonl [--] script.py arg...
    python -m opcontract.record --out calls.jsonl -m some.module arg...

The command line runs the script (``__main__``, ``sys.argv`` = [script, args...]) or the module
with recording on for the whole run, until interpreter exit (atexit: after the program's
non-daemon threads ended), then prints ``[opcontract.record] N calls of M custom ops
(K signatures) -> calls.jsonl`` on stderr. Its exit status is the program's; a bad command
line exits 2.

Format: JSON Lines (UTF-8), appended to. Each recording session writes a header line, then one
line per distinct call signature::

    {"opcontract_recording": 1, "torch": "2.13.0+cpu", "program": "serve.py --x 1", "pid": 4242, "started": "2026-12-02T10:00:00Z"}
    {"op": "_C::rms_norm", "overload": "default", "calls": 12, "site": "vllm/model_executor/layers/layernorm.py:87", "args": [{"name": "out", "tensor": {"dtype": "float32", "shape": [4, 64], "strides": [64, 1], "offset": 0, "storage": 0, "storage_bytes": 1024, "align": 64, "contiguous": true, "device": "cpu"}}, ..., {"name": "epsilon", "value": 1e-06}]}

``args`` lists every schema argument in schema order (defaults filled in), each as
``{"name", "tensor": TENSOR}``, ``{"name", "tensors": [TENSOR, ...]}`` (``null`` for a None
inside a ``Tensor?[]``), ``{"name", "none": true}``, ``{"name", "value": V}`` (bool, int, float,
str or a list of them; a dtype as its name, e.g. "float32"; a device as str; inf/nan floats as
"inf", "-inf", "nan"), or ``{"name", "object": "<type name>"}``. TENSOR has dtype, shape,
strides, offset (elements), storage (the index of its storage among this call's distinct
storages: arguments that share a buffer share it), storage_bytes, align (largest power of two
<= 64 dividing its data pointer), contiguous, device, and for integer and bool dtypes "min" and
"max" (omitted for an empty tensor; "range_skipped": true instead when it has more than 2**20
elements or could not be read, e.g. during CUDA graph capture). ``site`` is the first caller
outside torch and opcontract (generated FX code and Inductor's generated wrappers count as
torch), as ``path:line``: relative to the site-packages directory holding it, else to the
working directory, else absolute.

Lines are aggregated: identical op, overload, site and arguments (all but ``calls``, ``min``
and ``max``) make one line with a count. The file is written when recording stops and, while
calls keep coming, every 2 seconds (``FLUSH_INTERVAL``; the clock is looked at every
``CHECK_EVERY`` recorded calls): a periodic flush appends the signatures new or changed since
the last flush as lines of their own, so THE SAME SIGNATURE CAN APPEAR ON SEVERAL LINES, AND A
READER MERGES THEM: sums ``calls``, takes the min of the mins and the max of the maxes.
Every write is whole lines in one write(), so a killed process leaves complete lines and at
most one truncated last line (``summary()`` ignores one).

Limits: only calls that cross Python are seen (``torch.ops.ns.op(...)``, ``OpOverload``
calls from FX graphs and Inductor's Python wrapper, custom ops called from another op's Python
implementation). Calls made from C++ directly are not: a C++ kernel calling another op through
the dispatcher, Inductor's cpp_wrapper mode, replays of CUDA graphs. Tracing is not a call:
a call with a fake, functional or other ``__torch_dispatch__`` tensor subclass, or a meta
tensor, is not recorded. Only this process and children it forks (each with a header of its
own, their lines may interleave with the parent's; a forked child that ends with
``os._exit`` loses its last 2 seconds) are recorded, not spawned ones: to record the engine
of ``vllm serve`` in the recorded process, set VLLM_ENABLE_V1_MULTIPROCESSING=0.

Cost (measured on 2 busy cores, torch 2.13.0 CPU; best of 5 loops of 20,000 calls, per call):
``torch.ops.aten.add`` / ``torch.ops.aten.add.Tensor`` on two [4, 8] tensors: 2.02 / 1.90 us
without recording, 2.08 / 1.96 us with it (+0.06 us: the namespace check). A trivial custom op
(``noop(Tensor x, float alpha) -> ()``, Python kernel) through the packet / the overload:
1.51 / 1.44 us without, 6.90 / 6.81 us with recording (+5.4 us: binding, tensor metadata, the
caller's frame, aggregation); with an int64 x, whose min/max is read: 10.7 us (+9.2 us).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shlex
import site
import sys
import threading
import time
from contextlib import contextmanager
from functools import partial
from typing import Any, Iterator

import torch
import torch._ops

__all__ = ["recording", "start", "stop", "summary", "main", "FLUSH_INTERVAL", "CHECK_EVERY"]

# Seconds between periodic flushes, and how many recorded calls between looks at the clock.
FLUSH_INTERVAL = 2.0
CHECK_EVERY = 256
# Integer/bool tensors with more elements than this get "range_skipped" instead of min/max.
RANGE_LIMIT = 2 ** 20

# Not custom ops: ATen, its primitives, and more of torch's own (TorchScript's prim::device etc.,
# which FX graphs call; profiler::_record_function_*, which torch.profiler.record_function calls;
# the oneDNN kernels Inductor's CPU code calls, mkldnn::_linear_pointwise and its kin; the
# quantized and Inductor helper ops).
_SKIP_NAMESPACES = frozenset({"aten", "prims", "prim", "profiler", "mkldnn", "onednn", "quantized", "inductor"})
_PREFIX = "[opcontract.record]"
_OverloadPacket = torch._ops.OpOverloadPacket
_Overload = torch._ops.OpOverload
_TorchBindOverload = getattr(torch._ops, "TorchBindOpOverload", None)
_Tensor = torch.Tensor
_DISABLED_DISPATCH = torch.Tensor.__torch_dispatch__
_RANGED_DTYPES = frozenset(getattr(torch, n) for n in
                           ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
                           if hasattr(torch, n))
_MISSING = object()


class _Tls(threading.local):
    busy = False


_tls = _Tls()


class _Skip(Exception):
    """Raised while describing a call that is not a real one (tracing, fake tensors)."""


# ---------------------------------------------------------------------------------------------
# Per-op information (computed once per OpOverload / OpOverloadPacket, kept on the object)


class _OpInfo:
    __slots__ = ("op", "overload", "names", "positional", "index", "defaults", "tensor_list")

    def __init__(self, overload: Any) -> None:
        schema = overload._schema
        self.op = schema.name
        self.overload = overload._overloadname
        args = list(schema.arguments)
        self.names = [a.name for a in args]
        self.positional = [i for i, a in enumerate(args) if not a.kwarg_only]
        self.index = {a.name: i for i, a in enumerate(args)}
        self.defaults = [a.default_value if a.has_default_value() else _MISSING for a in args]
        self.tensor_list = [_is_tensor_list_type(a.type) for a in args]

    def bind(self, args: tuple, kwargs: dict) -> list | None:
        """The value of every schema argument, in order; None when the call does not bind."""
        vals = [_MISSING] * len(self.names)
        positional = self.positional
        if len(args) > len(positional):
            return None
        for i, a in enumerate(args):
            vals[positional[i]] = a
        for k, v in kwargs.items():
            i = self.index.get(k)
            if i is None or vals[i] is not _MISSING:
                return None
            vals[i] = v
        for i, v in enumerate(vals):
            if v is _MISSING:
                d = self.defaults[i]
                if d is _MISSING:
                    return None
                vals[i] = d
        return vals


class _PacketInfo:
    __slots__ = ("qualname", "single")

    def __init__(self, packet: Any) -> None:
        self.qualname = packet._qualified_op_name
        names = packet._overload_names
        self.single = _info_of(getattr(packet, names[0] or "default")) if len(names) == 1 else None

    def resolve(self, packet: Any, args: tuple, kwargs: dict) -> _OpInfo | None:
        if self.single is not None:
            return self.single
        try:
            name = torch._C._jit_resolve_packet(self.qualname, *args, **kwargs)
        except Exception:
            return None  # no overload matches: the call itself will raise
        info = _info_of(getattr(packet, name or "default"))
        return info or None


def _is_tensor_list_type(t: Any) -> bool:
    if isinstance(t, torch.OptionalType):
        t = t.getElementType()
    if not isinstance(t, torch.ListType):
        return False
    e = t.getElementType()
    if isinstance(e, torch.OptionalType):
        e = e.getElementType()
    return isinstance(e, torch.TensorType)


_annotated: list = []  # the op objects given an _opc_info, cleared on stop()


def _info_of(obj: Any) -> Any:
    """The object's cached info: False for aten/prims (never recorded), else _OpInfo/_PacketInfo."""
    info = obj.__dict__.get("_opc_info")
    if info is not None:
        return info
    if isinstance(obj, _OverloadPacket):
        ns = obj._qualified_op_name.split("::", 1)[0]
        info = False if ns in _SKIP_NAMESPACES else _PacketInfo(obj)
    else:
        info = False if obj._namespace in _SKIP_NAMESPACES else _OpInfo(obj)
    obj.__dict__["_opc_info"] = info
    _annotated.append(obj)
    return info


# ---------------------------------------------------------------------------------------------
# The patched __call__s


_orig_packet_call = _OverloadPacket.__call__
_orig_overload_call = _Overload.__call__
_orig_torchbind_call = _TorchBindOverload.__call__ if _TorchBindOverload is not None else None


def _packet_call(self, /, *args, **kwargs):
    # torch's OpOverloadPacket.__call__, inlined (a frame less on the aten fast path).
    call = self._op if not self._has_torchbind_op_overload else partial(_orig_packet_call, self)
    info = self._opc_info
    if info is False or _tls.busy:
        return call(*args, **kwargs)
    if info is None:
        info = _info_of(self)
        if info is False:
            return call(*args, **kwargs)
    rec = _active
    if rec is not None:
        rec.record(info.resolve(self, args, kwargs), args, kwargs)
    return call(*args, **kwargs)


def _overload_call(self, /, *args, **kwargs):
    # torch's OpOverload.__call__ is `self._op(*args, **kwargs)`: inlined.
    info = self._opc_info
    if info is False or _tls.busy:
        return self._op(*args, **kwargs)
    if info is None:
        info = _info_of(self)
        if info is False:
            return self._op(*args, **kwargs)
    rec = _active
    if rec is not None:
        rec.record(info, args, kwargs)
    return self._op(*args, **kwargs)


def _via_original(orig: Any, packet: bool) -> Any:
    """A wrapper that records, then calls ``orig`` (a __call__ not known to be torch's own)."""
    def call(self, /, *args, **kwargs):
        info = self._opc_info
        if info is None:
            info = _info_of(self)
        rec = _active
        if info is not False and rec is not None and not _tls.busy:
            rec.record(info.resolve(self, args, kwargs) if packet else info, args, kwargs)
        return orig(self, *args, **kwargs)
    return call


def _is_torchs(fn: Any) -> bool:
    return getattr(fn, "__module__", None) == "torch._ops"


def _patch() -> None:
    # The class-level default of the per-object cache (left in place after stop(), so that a
    # call racing with stop() in another thread still finds it).
    _OverloadPacket._opc_info = None
    _Overload._opc_info = None
    inline = _is_torchs(_orig_packet_call) and "_has_torchbind_op_overload" in _orig_packet_call.__code__.co_names
    _OverloadPacket.__call__ = _packet_call if inline else _via_original(_orig_packet_call, True)
    inline = _is_torchs(_orig_overload_call) and _orig_overload_call.__code__.co_names == ("_op",)
    _Overload.__call__ = _overload_call if inline else _via_original(_orig_overload_call, False)
    if _TorchBindOverload is not None:
        _TorchBindOverload.__call__ = _via_original(_orig_torchbind_call, False)


def _unpatch() -> None:
    _OverloadPacket.__call__ = _orig_packet_call
    _Overload.__call__ = _orig_overload_call
    if _TorchBindOverload is not None:
        _TorchBindOverload.__call__ = _orig_torchbind_call
    for obj in _annotated:
        obj.__dict__.pop("_opc_info", None)
    _annotated.clear()


# ---------------------------------------------------------------------------------------------
# Describing one call


_dtype_names: dict = {}
_real_types: dict = {_Tensor: True, torch.nn.Parameter: True}


def _dtype_name(dtype: torch.dtype) -> str:
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).replace("torch.", "", 1)
    return name


def _is_real_type(tp: type) -> bool:
    """Plain tensors, Parameters, and subclasses without a __torch_dispatch__ of their own (e.g.
    vLLM's weight parameters); not FakeTensor, FunctionalTensor or other dispatch subclasses."""
    real = _real_types.get(tp)
    if real is None:
        real = _real_types[tp] = getattr(tp, "__torch_dispatch__", _DISABLED_DISPATCH) is _DISABLED_DISPATCH
    return real


def _tensor_key(t: torch.Tensor, storages: dict, ranges: list) -> tuple:
    """A tensor's metadata as a hashable tuple; appends its [min, max] to ranges when it has one."""
    if not _is_real_type(type(t)) or t.is_meta or torch._is_functional_tensor(t):
        raise _Skip
    try:
        st = t.untyped_storage()
        sptr = st.data_ptr()
        sbytes = st.nbytes()
        ptr = t.data_ptr()
    except Exception:
        raise _Skip from None  # no storage: not a real (strided, materialized) tensor
    skey = (sptr, sbytes)
    sidx = storages.get(skey)
    if sidx is None:
        sidx = storages[skey] = len(storages)
    align = 64 if ptr % 64 == 0 else min(64, ptr & -ptr)
    dtype = t.dtype
    rng = 0  # 0: no range (float dtypes, empty tensors); 1: min/max; 2: range_skipped
    if dtype in _RANGED_DTYPES:
        n = t.numel()
        if n > RANGE_LIMIT:
            rng = 2
        elif n > 0:
            r = _value_range(t)
            if r is None:
                rng = 2
            else:
                rng = 1
                ranges.append(r)
    return (_dtype_name(dtype), tuple(t.shape), t.stride(), t.storage_offset(), sidx, sbytes, align,
            t.is_contiguous(), str(t.device), rng)


def _value_range(t: torch.Tensor) -> list | None:
    try:
        if t.is_cuda and torch.cuda.is_current_stream_capturing():
            return None  # reading values would break the capture
        if t.dtype == torch.bool:
            return [int(t.all()), int(t.any())]
        lo, hi = torch.aminmax(t)
        return [int(lo), int(hi)]
    except Exception:
        try:
            return [int(t.min()), int(t.max())]
        except Exception:
            return None


def _value_key(v: Any) -> Any:
    """A scalar value as a hashable, type-tagged form (True, 1 and 1.0 stay distinct); _MISSING
    when it is not one of the JSON-representable kinds."""
    tp = type(v)
    if tp is bool:
        return ("b", v)
    if tp is int:
        return ("i", v)
    if tp is float:
        return ("f", v if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf")))
    if tp is str:
        return ("s", v)
    if tp is torch.dtype:
        return ("s", _dtype_name(v))
    if tp is torch.device:
        return ("s", str(v))
    if tp is list or tp is tuple:
        items = []
        for x in v:
            k = ("z", None) if x is None else _value_key(x)
            if k is _MISSING:
                return _MISSING
            items.append(k)
        return ("l", tuple(items))
    # Subclasses (an IntEnum, a str Enum) as their base type.
    for base in (bool, int, float, str):
        if isinstance(v, base):
            return _value_key(base(v))
    return _MISSING


def _value_json(k: Any) -> Any:
    tag, v = k
    if tag == "l":
        return [_value_json(x) for x in v]
    return v


def _type_name(v: Any) -> str:
    tp = type(v)
    mod = tp.__module__
    return tp.__qualname__ if mod in ("builtins", None) else f"{mod}.{tp.__qualname__}"


def _args_key(info: _OpInfo, vals: list, ranges: list) -> tuple:
    storages: dict = {}
    out = []
    for name, v, tlist in zip(info.names, vals, info.tensor_list):
        if isinstance(v, _Tensor):
            out.append(("t", name, _tensor_key(v, storages, ranges)))
        elif v is None:
            out.append(("n", name))
        elif type(v) in (list, tuple) and (tlist or any(isinstance(x, _Tensor) for x in v)):
            metas = []
            for x in v:
                if x is None:
                    metas.append(None)
                elif isinstance(x, _Tensor):
                    metas.append(_tensor_key(x, storages, ranges))
                else:
                    break
            else:
                out.append(("ts", name, tuple(metas)))
                continue
            out.append(_scalar_item(name, v))
        else:
            out.append(_scalar_item(name, v))
    return tuple(out)


def _scalar_item(name: str, v: Any) -> tuple:
    k = _value_key(v)
    if k is _MISSING:
        if type(v).__name__.startswith("Sym"):
            raise _Skip  # symbolic sizes: tracing, not a call
        return ("o", name, _type_name(v))
    return ("v", name, k)


def _tensor_json(meta: tuple, ranges: Iterator) -> dict:
    dtype, shape, strides, offset, sidx, sbytes, align, contiguous, device, rng = meta
    d: dict = {"dtype": dtype, "shape": list(shape), "strides": list(strides), "offset": offset,
               "storage": sidx, "storage_bytes": sbytes, "align": align, "contiguous": contiguous,
               "device": device}
    if rng == 1:
        d["min"], d["max"] = next(ranges)
    elif rng == 2:
        d["range_skipped"] = True
    return d


def _line(key: tuple, calls: int, ranges: list) -> str:
    op, overload, site_, args = key
    it = iter(ranges)
    out = []
    for item in args:
        kind, name = item[0], item[1]
        if kind == "t":
            out.append({"name": name, "tensor": _tensor_json(item[2], it)})
        elif kind == "n":
            out.append({"name": name, "none": True})
        elif kind == "v":
            out.append({"name": name, "value": _value_json(item[2])})
        elif kind == "ts":
            out.append({"name": name, "tensors": [None if m is None else _tensor_json(m, it) for m in item[2]]})
        else:
            out.append({"name": name, "object": item[2]})
    return json.dumps({"op": op, "overload": overload, "calls": calls, "site": site_, "args": out},
                      allow_nan=False)


# ---------------------------------------------------------------------------------------------
# Call sites


_TORCH_DIRS = tuple({os.path.join(os.path.dirname(f), "") for f in
                     (torch.__file__, os.path.realpath(torch.__file__))})
_OWN_DIRS = tuple({os.path.join(os.path.dirname(f), "") for f in (__file__, os.path.realpath(__file__))})


def _site_dirs() -> list[str]:
    dirs = []
    try:
        dirs += site.getsitepackages()
    except Exception:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except Exception:
        pass
    dirs += [p for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")]
    out = []
    for d in dirs:
        for x in (os.path.abspath(d), os.path.realpath(d)):
            x = os.path.join(x, "")
            if x not in out:
                out.append(x)
    return sorted(out, key=len, reverse=True)


def _is_generated(filename: str) -> bool:
    """FX's generated graph code, Inductor's generated Python wrappers: torch's own frames."""
    return filename.startswith("<eval_with_key>") or (os.sep + "torchinductor_") in filename


# ---------------------------------------------------------------------------------------------
# The recorder


class _Recorder:
    def __init__(self, path: str, program: str) -> None:
        self.path = os.fspath(path)
        self.program = program
        self.cwd = os.path.join(os.getcwd(), "")
        self.site_dirs = _site_dirs()
        self.files: dict = {}  # co_filename -> its site path, or False for torch/opcontract files
        self.lock = threading.Lock()
        self._reset_counts()
        self.write_header()

    def _reset_counts(self) -> None:
        self.pid = os.getpid()
        self.pending: dict = {}  # key -> [calls, ranges] since the last flush
        self.seen: set = set()  # every signature recorded (for the stats)
        self.ops: set = set()
        self.total = 0
        self.since_check = 0
        self.last_flush = time.monotonic()
        self.header_due = False
        self.errors = 0

    def after_fork(self) -> None:
        """In a forked child: drop the parent's unflushed counts (the parent writes them)."""
        self.lock = threading.Lock()
        self._reset_counts()
        self.header_due = True

    def write_header(self) -> None:
        header = {"opcontract_recording": 1, "torch": torch.__version__, "program": self.program,
                  "pid": self.pid, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write([json.dumps(header)])

    def _write(self, lines: list[str]) -> None:
        data = ("\n".join(lines) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)

    def site(self) -> str:
        f = sys._getframe(3)
        files = self.files
        while f is not None:
            fn = f.f_code.co_filename
            s = files.get(fn)
            if s is None:
                s = files[fn] = self._site_path(fn)
            if s:
                return f"{s}:{f.f_lineno}"
            f = f.f_back
        return "<unknown>"

    def _site_path(self, fn: str) -> Any:
        if _is_generated(fn):
            return False
        if fn.startswith("<"):
            return fn
        a = os.path.abspath(fn)
        for p in {a, os.path.realpath(a)}:
            if p.startswith(_TORCH_DIRS) or p.startswith(_OWN_DIRS):
                return False
        for d in self.site_dirs:
            if a.startswith(d):
                return a[len(d):]
        if a.startswith(self.cwd):
            return a[len(self.cwd):]
        return a

    def record(self, info: _OpInfo | None, args: tuple, kwargs: dict) -> None:
        if info is None:
            return
        _tls.busy = True
        try:
            vals = info.bind(args, kwargs)
            if vals is None:
                return  # does not bind: the op will raise
            ranges: list = []
            try:
                akey = _args_key(info, vals, ranges)
            except _Skip:
                return
            key = (info.op, info.overload, self.site(), akey)
            with self.lock:
                e = self.pending.get(key)
                if e is None:
                    self.pending[key] = [1, ranges]
                    if key not in self.seen:
                        self.seen.add(key)
                        self.ops.add(info.op)
                else:
                    e[0] += 1
                    for r, new in zip(e[1], ranges):
                        if new[0] < r[0]:
                            r[0] = new[0]
                        if new[1] > r[1]:
                            r[1] = new[1]
                self.total += 1
                self.since_check += 1
                if self.since_check >= CHECK_EVERY:
                    self.since_check = 0
                    if time.monotonic() - self.last_flush >= FLUSH_INTERVAL:
                        self._flush_locked()
        except Exception as exc:  # never break the program being recorded
            self.errors += 1
            if self.errors == 1:
                sys.stderr.write(f"{_PREFIX} warning: a call of {info.op} not recorded: {exc!r}\n")
        finally:
            _tls.busy = False

    def _flush_locked(self) -> None:
        self.last_flush = time.monotonic()
        if not self.pending:
            return
        lines = []
        if self.header_due:
            self.header_due = False
            self.pid = os.getpid()
            self.write_header()
        for key, (calls, ranges) in self.pending.items():
            lines.append(_line(key, calls, ranges))
        self.pending = {}
        self._write(lines)

    def flush(self) -> None:
        with self.lock:
            self._flush_locked()


_active: _Recorder | None = None
_start_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _start_lock
    _start_lock = threading.Lock()
    if _active is not None:
        _active.after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def start(path: str | os.PathLike, program: str | None = None) -> None:
    """Starts recording custom-op calls to ``path`` (appended to: a header line now, the calls
    at stop() and every FLUSH_INTERVAL seconds). One recording at a time."""
    global _active
    with _start_lock:
        if _active is not None:
            raise RuntimeError(f"opcontract.record: already recording to {_active.path}")
        if program is None:
            program = shlex.join(sys.argv) if sys.argv and sys.argv != [""] else sys.executable
        rec = _Recorder(os.fspath(path), program)
        _active = rec
        _patch()
        atexit.register(_stop_at_exit)


def stop() -> dict:
    """Stops recording, appends what is not written yet; returns {"calls", "ops", "signatures",
    "path"} for the session (the calls this process recorded)."""
    global _active
    with _start_lock:
        rec = _active
        if rec is None:
            raise RuntimeError("opcontract.record: not recording")
        _unpatch()
        _active = None
        atexit.unregister(_stop_at_exit)
        rec.flush()
        return {"calls": rec.total, "ops": len(rec.ops), "signatures": len(rec.seen), "path": rec.path}


_exit_report: list = []  # [pid, path as typed]: the command line's summary line at exit


def _stop_at_exit() -> None:
    if _active is None:
        return
    stats = stop()
    if _exit_report and _exit_report[0] == os.getpid():
        sys.stderr.write(f"{_PREFIX} {stats['calls']} calls of {stats['ops']} custom ops "
                         f"({stats['signatures']} signatures) -> {_exit_report[1]}\n")
        sys.stderr.flush()


@contextmanager
def recording(path: str | os.PathLike, program: str | None = None) -> Iterator[None]:
    """``with recording("calls.jsonl"): ...`` records the custom-op calls made inside."""
    start(path, program)
    try:
        yield
    finally:
        stop()


def summary(path: str | os.PathLike) -> dict[str, int]:
    """Total calls per op ("ns::name") in a recording file, all sessions and lines merged. A
    truncated last line (a killed process) is ignored."""
    totals: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    last = max((i for i, s in enumerate(lines) if s.strip()), default=-1)
    for i, s in enumerate(lines):
        if not s.strip():
            continue
        try:
            obj = json.loads(s)
        except ValueError:
            if i == last:
                break
            raise
        if "op" in obj:
            totals[obj["op"]] = totals.get(obj["op"], 0) + obj["calls"]
    return totals


# ---------------------------------------------------------------------------------------------
# The command line


USAGE = """\
usage: python -m opcontract.record --out FILE [--] script.py [arg ...]
       python -m opcontract.record --out FILE -m module [arg ...]

Runs the script or module with every custom-op call recorded (appended) to FILE as JSON Lines;
see `python -c "import opcontract.record as r; help(r)"` for the format.
"""


def _usage_error(msg: str) -> None:
    sys.stderr.write(f"{_PREFIX} {msg}\n{USAGE}")
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    import runpy

    argv = list(sys.argv[1:] if argv is None else argv)
    out = None
    module = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if a == "--out":
            if i + 1 >= len(argv):
                _usage_error("--out needs a file")
            out = argv[i + 1]
            i += 2
        elif a.startswith("--out="):
            out = a[len("--out="):]
            i += 1
        elif a == "--":
            i += 1
            break
        elif a == "-m":
            if i + 1 >= len(argv):
                _usage_error("-m needs a module")
            module = argv[i + 1]
            i += 2
            break
        elif a.startswith("-"):
            _usage_error(f"unknown option {a}")
        else:
            break
    rest = argv[i:]
    if not out:
        _usage_error("--out FILE is required")
    if module is None and not rest:
        _usage_error("no script (or -m module) to run")

    if module is None:
        script, args = rest[0], rest[1:]
        program = shlex.join([script, *args])
    else:
        script, args = None, rest
        program = shlex.join(["-m", module, *args])

    try:
        start(out, program=program)
    except OSError as exc:
        _usage_error(f"cannot write {out}: {exc}")
    _exit_report[:] = [os.getpid(), out]
    if script is not None:
        sys.argv = [script, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    else:
        sys.argv = [module, *args]
        sys.path[0] = os.getcwd()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    # Recording goes on until interpreter exit (atexit), which prints the summary line.


if __name__ == "__main__":
    # Run the canonical module's main(), so that a program importing opcontract.record shares
    # its recorder state (this file run as __main__ is a second copy of the module).
    from opcontract.record import main as _main

    _main()
