"""Python ops for opcontract's tests of state hooks, Python references and fake-only checks.

Imported with ``opcontract_test_ops`` (``--import opcontract_test_ops``, this folder on
PYTHONPATH). Each mechanism has an op that holds and a planted twin its contract catches:

- ``python_state:`` (tests/contracts/python/python_state.yaml): ``opc_py::scale_by_layer``
  reads a layer the hook ``build_layer`` registers under a name, as vLLM's attention and MoE
  ops look their layer up in the forward context, and gets that name as a ``LayerRef``
  (an opaque value type, as vLLM's ``LayerName``). It writes ``out = x * layer.scale`` on the
  real rows; its twin ``..._first_row_only`` leaves rows >= 1 of the caller's buffer unwritten
  (``write``), and ``..._off_by_one`` computes with scale + 1 (``reference``, against the
  Python reference ``scale_by_layer_reference``).
- a tensor the hook makes (tests/contracts/python/state_tensor.yaml): ``opc_py::packed_matmul``
  takes a weight the hook ``pack_weight`` draws and packs, as vLLM's linears take a weight
  packed by vLLM's own packing op; its twin ``..._writes_weight`` writes into that weight
  (``mutation``: a state tensor is observed as a drawn one is).
- a contract that skips eager (tests/contracts/python/fake_alone.yaml): ``opc_py::indexer``
  has a fake and no CPU kernel, as vLLM's Triton-only ops on a CPU build; its fake returns a
  fresh tensor, its twin ``opc_py::indexer_returns_buffer``'s returns the mutable buffer
  itself, as vLLM's ``sparse_attn_indexer`` does (``alias`` in the fake mode).
- a CUDA op on a machine without a GPU (tests/contracts/python/fake_cuda.yaml, ``device:
  cuda``): ``opc_py::pack_rows`` has a fake and no kernel, and its fake refuses a tensor
  that is not on CUDA, as a fake written for vLLM's CUDA build may; its twin
  ``..._unhalved`` forgets that two values pack into a byte (``fake``, against returns:),
  and ``..._aliased`` returns x's own bytes (``alias`` in the fake mode, which judges
  aliasing where eager cannot run).
"""

from dataclasses import dataclass

import torch
from torch._library.opaque_object import register_opaque_type
from torch._opaque_base import OpaqueBase


class LayerRef(OpaqueBase):
    """A layer's name as an opaque value type, as vLLM's ``LayerName`` is."""

    def __init__(self, value: str):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, LayerRef) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __fx_repr__(self):
        return (f"LayerRef({self.value!r})", {"LayerRef": LayerRef})


register_opaque_type(LayerRef, typ="value", hoist=True)
_LAYER_TYPE = "opcontract_state_ops.LayerRef"


@dataclass
class Layer:
    """What the hook builds once per configuration: here just a scale."""

    scale: float


_layers: dict[str, Layer] = {}
builds: dict[int, int] = {}  # configuration -> times built in this process (once, reused)


def build_layer(case) -> dict:
    """python_state hook: the layer of the case's configuration, built once and reused."""
    scale = case.values["scale"]
    name = f"layers.{scale}"
    if name not in _layers:
        builds[scale] = builds.get(scale, 0) + 1
        _layers[name] = Layer(float(scale))
    return {"layer": LayerRef(name)}


_lib = torch.library.Library("opc_py", "FRAGMENT")


def _scale_by_layer(x: torch.Tensor, out: torch.Tensor, layer: LayerRef, rows: int | None, delta: float) -> None:
    scale = _layers[layer.value].scale + delta
    n = out.shape[0] if rows is None else min(rows, out.shape[0])
    out[:n].copy_(x[:n] * scale)


for _name, _rows, _delta in (
    ("scale_by_layer", None, 0.0),
    ("scale_by_layer_first_row_only", 1, 0.0),
    ("scale_by_layer_off_by_one", None, 1.0),
):
    _lib.define(f"{_name}(Tensor x, Tensor(a1!) out, {_LAYER_TYPE} layer) -> ()")
    _lib.impl(_name, lambda x, out, layer, _r=_rows, _d=_delta: _scale_by_layer(x, out, layer, _r, _d), "CPU")


def scale_by_layer_reference(x: torch.Tensor, out: torch.Tensor, layer: LayerRef) -> None:
    """The reference: plain torch on the state the hook built."""
    out.copy_(x * _layers[layer.value].scale)


def _indexer_fake(x: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(buf)


def _indexer_returns_buffer_fake(x: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    return buf  # planted: the return is the mutable argument, unannotated


for _name, _fake in (("indexer", _indexer_fake), ("indexer_returns_buffer", _indexer_returns_buffer_fake)):
    _lib.define(f"{_name}(Tensor x, Tensor(a1!) buf) -> Tensor")
    _lib._register_fake(_name, _fake)


def _pack_rows_fake(x: torch.Tensor, halve: bool = True) -> torch.Tensor:
    torch._check(x.device.type == "cuda", lambda: f"pack_rows is a CUDA op, and x is on {x.device}")
    return x.new_empty((x.shape[0], x.shape[1] // 2 if halve else x.shape[1]), dtype=torch.uint8)


def _pack_rows_aliased_fake(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[1] // 2
    return x.view(torch.uint8).as_strided((x.shape[0], half), (half, 1))  # planted: x's bytes


for _name, _fake in (
    ("pack_rows", _pack_rows_fake),
    ("pack_rows_unhalved", lambda x: _pack_rows_fake(x, halve=False)),  # planted
    ("pack_rows_aliased", _pack_rows_aliased_fake),
):
    _lib.define(f"{_name}(Tensor x) -> Tensor")
    _lib._register_fake(_name, _fake)


def pack_weight(case) -> dict:
    """python_state hook: a weight drawn from the case's seed, handed over "packed" ([k, n]
    rows), as vLLM's linears hand their kernels a weight its own packing op made."""
    g = torch.Generator().manual_seed(case.seed)
    weight = torch.randn(case.values["n"], case.values["inner"], generator=g)
    return {"packed": weight.t().contiguous()}


def _packed_matmul(out: torch.Tensor, x: torch.Tensor, packed: torch.Tensor, scribble: bool) -> None:
    out.copy_(x @ packed)
    if scribble and packed.numel():
        packed.view(-1)[0] += 1  # planted: the kernel writes the weight it was handed


for _name, _scribble in (("packed_matmul", False), ("packed_matmul_writes_weight", True)):
    _lib.define(f"{_name}(Tensor(a0!) out, Tensor x, Tensor packed) -> ()")
    _lib.impl(_name, lambda out, x, packed, _s=_scribble: _packed_matmul(out, x, packed, _s), "CPU")


def packed_matmul_reference(out: torch.Tensor, x: torch.Tensor, packed: torch.Tensor) -> None:
    """The reference: plain torch on the weight the hook packed."""
    out.copy_(x @ packed)


def pack_weight_up_to_4(case) -> dict:
    """python_state hook that declines weights wider than 4, as vLLM's linear dispatch
    declines a configuration its packing op refuses (and serves it another way)."""
    from opcontract_bridge import NotCalledHere

    if case.values["n"] > 4:
        raise NotCalledHere("no weight wider than 4 is packed here")
    return pack_weight(case)
