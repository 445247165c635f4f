"""Tests of runners/python/opcontract_bridge.py against ops planted here, each with a clean twin.

Run: .venv/bin/python -m pytest tests/python -q
"""

import functools
import os
import pathlib
import subprocess
import sys

import pytest
import torch
from torch._dynamo.utils import counters

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
# Its outputs keyword-only, as vLLM's scaled_fp4_quant.out declares them.
_register("scaled_by_keyword(Tensor x, float s, *, Tensor(a!) out) -> ()",
          lambda x, s, *, out: _scale_into(out, x, s), lambda x, s, *, out: None)


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


@torch.library.custom_op("opc_pytest::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@doubled.register_fake
def _(x):
    return torch.empty_like(x)


def test_compiled_call_compiles_only_for_what_a_case_reaches_anew():
    def call(x, reaches, budget=8):
        result = bridge.compiled_call("opc_pytest::doubled", "", [x], "aot_eager", True, "", budget, reaches)
        assert result["ok"], result["error"]
        if not result["skipped"]:
            assert torch.equal(result["returns"][0], x * 2)
        return result

    first = call(torch.ones(4, 3), ["x float32", "x contiguous"])
    assert first["compiled"] and first["compilations"] == 1
    # Other sizes fit the dynamic graph; a size of 1 would need a graph but reaches nothing new.
    assert not call(torch.ones(7, 5), ["x float32", "x contiguous"])["compiled"]
    assert call(torch.ones(1, 3), ["x float32", "x contiguous"])["skipped"]
    assert call(torch.ones(4, 3, dtype=torch.float64), ["x float64", "x contiguous"])["compiled"]
    assert call(torch.ones(4, 3, dtype=torch.float16), ["x float16", "x contiguous"], budget=2)["skipped"]
    assert bridge.compiled_graphs("opc_pytest::doubled", "", "aot_eager") == [
        "x float32, x contiguous", "x float64"]


def test_a_case_no_graph_fits_and_none_may_compile_calls_nothing():
    x = torch.arange(6.0).view(2, 3)
    first = bridge.compiled_call("opc_pytest::scale_into", "", [torch.empty(2, 3), x, 2.0], "aot_eager", True,
                                 "", 1, ["out float32"])
    assert first["ok"] and first["compiled"], first["error"]
    out = torch.full((2, 3), -1.0, dtype=torch.float64)
    result = bridge.compiled_call("opc_pytest::scale_into", "", [out, x.double(), 2.0], "aot_eager", True,
                                  "", 1, ["out float64"])
    assert result["skipped"] and not result["compiled"]
    # No graph fitted and the budget is spent: the op was not called, not even eagerly.
    assert torch.equal(out, torch.full((2, 3), -1.0, dtype=torch.float64))


def test_keyword_only_arguments_reach_the_op_by_name():
    # The C++ side hands every argument in schema order; an OpOverload takes `out` by name only.
    x = torch.arange(6.0).view(2, 3)
    fake = bridge.fake_call("opc_pytest::scaled_by_keyword", "", [x, 2.0, torch.empty(2, 3)])
    assert fake["ok"], fake["error"]
    out = torch.zeros(2, 3)
    compiled = bridge.compiled_call("opc_pytest::scaled_by_keyword", "", [x, 2.0, out], "aot_eager", True)
    assert compiled["ok"], compiled["error"]
    assert torch.equal(out, x * 2)


@pytest.fixture
def compile_cache(tmp_path):
    """Inductor's and AOTAutograd's on-disk caches in a folder of the test's own, then off."""
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    bridge.use_compile_cache(str(tmp_path))
    yield tmp_path
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    if before is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = before


def test_compile_cache_gives_each_tp_size_its_own_graph(compile_cache):
    """The bug that kept the on-disk caches off: sequence_parallel_chunk_impl's fake reads the
    TP size at trace time, which inductor's key does not see, so a graph compiled for tp=2
    was served to tp=1 ("expected size 6==3"). compiled_call's key names the context."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import opcontract_test_ops as ops

    counters.clear()
    x = torch.randn(6, 4)
    for tp in (2, 1):
        ops.set_tp(tp, 0)
        result = bridge.compiled_call("opc_py::sequence_parallel_chunk_impl", "", [x], "inductor", True,
                                      f"tp_size={tp} tp_rank=0 ", 8, None)
        assert result["ok"], result["error"]
        assert torch.equal(result["returns"][0], torch.ops.opc_py.sequence_parallel_chunk_impl(x))
    assert counters["inductor"]["fxgraph_cache_miss"] == 2, "tp=1 compiles a graph of its own"
    assert counters["inductor"]["fxgraph_cache_hit"] == 0


_LATER_RUN = """
import sys, torch
sys.path[:0] = {paths!r}
import opcontract_bridge as bridge
from torch._dynamo.utils import counters
bridge.use_compile_cache({cache!r})
result = bridge.compiled_call("opc_pytest_run::tripled", "", [torch.ones(5, 2)], "inductor", True, "", 8, None)
assert result["ok"] and torch.equal(result["returns"][0], torch.full((5, 2), 3.0)), result
print(counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
"""


def test_compile_cache_serves_a_later_run(tmp_path):
    """A second run (another process) with the same cache finds the first one's graph."""
    here = pathlib.Path(__file__).resolve()
    paths = [str(here.parents[2] / "runners" / "python"), str(here.parent)]
    define = ("lib = torch.library.Library('opc_pytest_run', 'DEF'); "
              "lib.define('tripled(Tensor x) -> Tensor'); "
              "lib.impl('tripled', lambda x: x * 3, 'CPU'); "
              "lib._register_fake('tripled', lambda x: torch.empty_like(x))")
    script = _LATER_RUN.format(paths=paths, cache=str(tmp_path)).replace(
        "from torch._dynamo", define + "\nfrom torch._dynamo")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs == [["0", "1"], ["1", "0"]]
    assert (tmp_path / "fxgraph").is_dir(), "the graphs are in the folder given"
