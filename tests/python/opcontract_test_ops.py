"""Ops registered from Python for opcontract's tests of the embedded Python.

Imported by the checker (``--import opcontract_test_ops``, with this folder on PYTHONPATH),
as vLLM's own modules are. Two registrations, as real code does them:

- ``torch.library.custom_op`` with ``register_fake``: ``opc_py::row_sums`` and a twin whose
  fake mispredicts empty input (``fake`` finding);
- ``Library.define`` + ``impl`` + ``_register_fake``, as vLLM's ``direct_register_custom_op``
  does: ``opc_py::sequence_parallel_chunk_impl``, written from vLLM 0.32's semantics (pad
  the token dim to a multiple of the TP size, return this rank's chunk, cloned when nothing
  was padded), and ``opc_py::sequence_parallel_chunk_impl_pr44130``, the variant before vLLM
  PR 44130 that returns a view of x when nothing is padded (``alias``, ``compiled``).

The TP world size and rank live here, set per case through the contract's
``python_context: opcontract_test_ops:set_tp``, as vLLM's live in vllm.distributed.
The ops of the state-hook, Python-reference and fake-only tests are in
opcontract_state_ops.py, imported at the end.
"""

import torch

_tp = {"size": 1, "rank": 0}


def set_tp(tp_size: int, tp_rank: int) -> None:
    _tp["size"], _tp["rank"] = tp_size, tp_rank


@torch.library.custom_op("opc_py::row_sums", mutates_args=())
def row_sums(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)


@row_sums.register_fake
def _row_sums_fake(x):
    return x.new_empty(x.shape[0])


@torch.library.custom_op("opc_py::row_sums_fake_wrong_when_empty", mutates_args=())
def row_sums_fake_wrong_when_empty(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)


@row_sums_fake_wrong_when_empty.register_fake
def _row_sums_wrong_fake(x):
    # Planted: one row too many when there are none.
    return x.new_empty(x.shape[0] if x.shape[0] != 0 else 1)


_lib = torch.library.Library("opc_py", "FRAGMENT")


def _chunk(x: torch.Tensor, clone_unpadded: bool) -> torch.Tensor:
    size, rank = _tp["size"], _tp["rank"]
    pad = -x.shape[0] % size
    padded = torch.nn.functional.pad(x, (0, 0, 0, pad)) if pad else x
    chunk = padded.shape[0] // size
    part = padded.narrow(0, rank * chunk, chunk)
    return part.clone() if clone_unpadded and padded is x else part


def _chunk_fake(x: torch.Tensor) -> torch.Tensor:
    rows = -(-x.shape[0] // _tp["size"])
    return x.new_empty((rows, *x.shape[1:]))


for _name, _clone in (("sequence_parallel_chunk_impl", True),
                      ("sequence_parallel_chunk_impl_pr44130", False)):
    _lib.define(f"{_name}(Tensor x) -> Tensor", tags=(torch.Tag.needs_fixed_stride_order,))
    _lib.impl(_name, lambda x, _clone=_clone: _chunk(x, _clone), "CPU")
    _lib._register_fake(_name, _chunk_fake)
import opcontract_state_ops  # noqa: E402,F401  (registers the ops of the state-hook tests)
