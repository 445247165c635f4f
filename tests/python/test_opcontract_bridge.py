"""Tests of runners/python/opcontract_bridge.py against ops planted here, each with a clean twin.

Run: .venv/bin/python -m pytest tests/python -q
"""

import functools
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "runners" / "python"))
import opcontract_bridge as bridge  # noqa: E402  (after the path it lives on)

lib = torch.library.Library("opc_pytest", "DEF")


def _register(schema, impl, fake):
    """As vLLM's direct_register_custom_op does: define, a CPU kernel, a fake."""
    name = schema.split("(")[0]
    lib.define(schema)
    lib.impl(name, impl, "CPU")
    lib._register_fake(name, fake)


# Fake twins: the planted fake predicts one element for an empty input, eager returns none.
@torch.library.custom_op("opc_pytest::flat_copy", mutates_args=())
def flat_copy(x: torch.Tensor) -> torch.Tensor:
    return x.flatten().clone()


@flat_copy.register_fake
def _(x):
    return x.new_empty(x.numel())


@torch.library.custom_op("opc_pytest::flat_copy_one_when_empty", mutates_args=())
def flat_copy_one_when_empty(x: torch.Tensor) -> torch.Tensor:
    return x.flatten().clone()


@flat_copy_one_when_empty.register_fake
def _(x):
    return x.new_empty(1 if x.numel() == 0 else x.numel())


# Compiled twins: the planted op returns a view of its (non-mutable) input.
_register("prefix_view(Tensor x, int n) -> Tensor", lambda x, n: x[:n], lambda x, n: x[:n])
_register("prefix_copy(Tensor x, int n) -> Tensor", lambda x, n: x[:n].clone(),
          lambda x, n: x.new_empty(n, *x.shape[1:]))
_register("add_one_(Tensor(a!) x) -> Tensor(a!)", lambda x: x.add_(1), lambda x: x)


def _scale_into(out, x, s):
    out.copy_(x * s)


_register("scale_into(Tensor! out, Tensor x, float s) -> ()", _scale_into, lambda out, x, s: None)


# Symbolic twins: the planted fake picks a tuning from an lru_cache keyed by the hidden
# size, as kernel launchers keep per-size tables; a symbolic size is unhashable.
@functools.lru_cache
def _rows_per_block(hidden: int) -> int:
    return 4 if hidden % 4 == 0 else 1


def _row_sums_fake_tuned(x):
    _rows_per_block(x.shape[-1])
    return x.new_empty(x.shape[:-1])


_register("row_sums(Tensor x) -> Tensor", lambda x: x.sum(-1), lambda x: x.new_empty(x.shape[:-1]))
_register("row_sums_tuned(Tensor x) -> Tensor", lambda x: x.sum(-1), _row_sums_fake_tuned)
# Pins dim 0 with a guard (a fast path for exactly eight rows).
_register("eight_rows(Tensor x) -> Tensor", lambda x: x.clone(),
          lambda x: torch.empty_like(x) if x.shape[0] == 8 else x.new_empty(x.shape))

# No fake at all: PyTorch makes a trivial one for the op that mutates and returns nothing.
lib.define("no_fake(Tensor x) -> Tensor")
lib.impl("no_fake", lambda x: x.clone(), "CPU")


def _zero(out):
    out.zero_()


lib.define("zero_no_fake(Tensor! out) -> ()")
lib.impl("zero_no_fake", _zero, "CPU")


def _meta(t):
    return {"sizes": list(t.shape), "strides": list(t.stride()),
            "storage_offset": t.storage_offset(), "dtype": str(t.dtype)}


def test_fake_keeps_views_offsets_and_storage_sharing():
    buffer = torch.arange(200.0)
    x = buffer.as_strided((6, 5), (1, 10), 7)  # transposed rows at an offset
    result = bridge.fake_call("opc_pytest::prefix_view", "", [x, 4])
    eager = torch.ops.opc_pytest.prefix_view(x, 4)
    assert result["ok"], result["error"]
    assert result["fake_kind"] == "python_fake"
    (ret,) = result["returns"]
    assert {k: ret[k] for k in _meta(eager)} == _meta(eager)
    assert ret["aliases_arg"] == 0 and ret["aliases_return"] == -1
    assert result["args_after"] == [{"arg": 0, **_meta(x)}]


def test_fake_predicting_wrong_shape_for_empty_input():
    empty, full = torch.empty(0, 3), torch.ones(2, 3)
    for x in (empty, full):
        eager = _meta(flat_copy(x))
        clean = bridge.fake_call("opc_pytest::flat_copy", "default", [x])["returns"][0]
        planted = bridge.fake_call("opc_pytest::flat_copy_one_when_empty", "", [x])["returns"][0]
        assert clean["sizes"] == eager["sizes"]
        assert (planted["sizes"] == eager["sizes"]) == (x is full)


def test_fake_failing_only_with_symbolic_sizes():
    x = torch.ones(6, 8)
    assert bridge.fake_call("opc_pytest::row_sums_tuned", "", [x], symbolic=False)["ok"]
    assert bridge.fake_call("opc_pytest::row_sums", "", [x], symbolic=True)["ok"]
    result = bridge.fake_call("opc_pytest::row_sums_tuned", "", [x], symbolic=True)
    assert not result["ok"]
    assert result["error"] == "TypeError: unhashable type: non-nested SymInt"


def test_symbolic_dims_skip_sizes_0_and_1_and_report_pinned_ones():
    result = bridge.fake_call("opc_pytest::row_sums", "", [torch.ones(1, 0, 5)], symbolic=True)
    assert result["symbolic_dims"] == [[0, 2]]
    (ret,) = result["returns"]
    assert ret["sizes"] == [1, 0] and ret["symbolic"] == [False, False]

    x = torch.ones(8, 3)
    result = bridge.fake_call("opc_pytest::eight_rows", "", [x], True, dynamic_dims={0: [0]})
    assert result["symbolic_dims"] == [[0, 0]] and result["specialized_dims"] == [[0, 0]]
    assert result["returns"][0]["sizes"] == [8, 3]
    result = bridge.fake_call("opc_pytest::row_sums", "", [x], symbolic=True, dynamic_dims={0: [0]})
    assert result["specialized_dims"] == [] and result["returns"][0]["symbolic"] == [True]


def test_fake_kinds_and_python_registered_ops():
    assert bridge.op_fake_kind("opc_pytest::flat_copy") == "python_fake"
    assert bridge.op_fake_kind("aten::add.Tensor") == "meta_kernel"
    assert bridge.op_fake_kind("aten::linear") == "composite"
    assert bridge.op_fake_kind("opc_pytest::zero_no_fake") == "trivial"
    assert bridge.fake_call("opc_pytest::zero_no_fake", "", [torch.ones(2)])["ok"]
    assert bridge.op_fake_kind("opc_pytest::no_fake") == "none"
    result = bridge.fake_call("opc_pytest::no_fake", "", [torch.ones(2)])
    assert result["error"] == "UnsupportedOperatorException: opc_pytest.no_fake.default"
    ops = bridge.python_registered_ops()
    assert "opc_pytest::prefix_view" in ops and "opc_pytest::flat_copy" in ops
    assert not any(op.startswith("prims::") for op in ops)


def test_compiled_view_of_input_is_an_aliasing_error():
    x = torch.arange(12.0).view(4, 3)
    result = bridge.compiled_call("opc_pytest::prefix_view", "", [x, 2], "aot_eager", True)
    assert not result["ok"]
    assert "may not alias any inputs to this custom operator" in result["error"]
    # Again from the cache: PyTorch alone would check only the first call.
    assert not bridge.compiled_call("opc_pytest::prefix_view", "", [x, 2], "aot_eager", True)["ok"]

    result = bridge.compiled_call("opc_pytest::prefix_copy", "", [x, 2], "aot_eager", True)
    assert result["ok"], result["error"]
    assert torch.equal(result["returns"][0], torch.ops.opc_pytest.prefix_copy(x, 2))


def test_compiled_refuses_a_return_with_an_alias_annotation():
    result = bridge.compiled_call("opc_pytest::add_one_", "", [torch.zeros(3)], "aot_eager", False)
    assert not result["ok"]
    assert result["error"].startswith(
        "RuntimeError: Found a custom (non-ATen) operator whose output has alias annotations")


def test_compiled_mutation_lands_in_the_callers_view_like_eager():
    x = torch.arange(6.0).view(2, 3)
    buffers = [torch.full((20,), -1.0) for _ in range(2)]
    outs = [b[4:10].view(2, 3) for b in buffers]  # `out` at a storage offset
    torch.ops.opc_pytest.scale_into(outs[0], x, 2.0)
    result = bridge.compiled_call("opc_pytest::scale_into", "", [outs[1], x, 2.0], "inductor", True)
    assert result["ok"], result["error"]
    assert result["returns"] == []
    assert torch.equal(buffers[1], buffers[0])


def test_compiled_cache_compiles_a_bounded_number_of_times():
    for rows in range(50):
        x = torch.randn(rows, 3)
        result = bridge.compiled_call("opc_pytest::flat_copy", "default", [x], "aot_eager", True)
        assert result["ok"], result["error"]
        assert torch.equal(result["returns"][0], flat_copy(x))
    # One graph for 0 rows, one for 1 (both specialised), one for the rest.
    assert result["compilations"] <= 3
