"""Tests of runners/python/opcontract_fake_classes.py: the fake mode once per class.

Every answer a reused trace gives is compared with the real fakes' (static and symbolic) on
the same case; fakes planted here read sizes in the ways a trace may not see.

Run: .venv/bin/python -m pytest tests/python -q
"""

import pathlib
import sys

import torch
from torch.fx.experimental.symbolic_shapes import optimization_hint

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "runners" / "python"))
import opcontract_bridge as bridge  # noqa: E402  (after the path it lives on)
import opcontract_fake_classes as fake_classes  # noqa: E402

lib = torch.library.Library("opc_pytest_fc", "DEF")
_world = {"size": 1}


def _register(schema, impl, fake):
    name = schema.split("(")[0]
    lib.define(schema)
    lib.impl(name, impl, "CPU")
    lib._register_fake(name, fake)


def _planted_tuned(x):
    # A tuning table's lookup on a size's hint, without a guard: the ShapeEnv never hears of
    # it. Planted: wrong for more than 100 rows.
    return x.new_empty(1 if optimization_hint(x.shape[0]) > 100 else x.shape[0])


def _asks_the_shape_env(x):
    n = x.shape[0]
    rows = n.node.shape_env.size_hint(n.node.expr) if isinstance(n, torch.SymInt) else n
    return x.new_empty(1 if rows > 100 else n)


def _raises_with_its_size(x):
    if x.shape[1] == 3:
        raise ValueError(f"three columns and {int(x.shape[0])} rows")
    return x.new_empty(x.shape)


_register("rows(Tensor x) -> Tensor", lambda x: x.sum(-1), lambda x: x.new_empty(x.shape[:-1]))
_register("prefix(Tensor x, int n) -> Tensor", lambda x, n: x[:n], lambda x, n: x[:n])
_register("eight(Tensor x) -> Tensor", lambda x: x.clone(),
          lambda x: torch.empty_like(x) if x.shape[0] == 8 else x.new_empty(x.shape))
_register("into(Tensor! out, Tensor x) -> ()", lambda out, x: out.copy_(x), lambda out, x: None)
_register("count(Tensor x) -> SymInt", lambda x: x.shape[0] * 2, lambda x: x.shape[0] * 2)
_register("tuned(Tensor x) -> Tensor", lambda x: x.clone(), _planted_tuned)
_register("asks(Tensor x) -> Tensor", lambda x: x.clone(), _asks_the_shape_env)
_register("raises(Tensor x) -> Tensor", lambda x: x.clone(), _raises_with_its_size)
_register("per_device(Tensor x) -> Tensor", lambda x: x.clone(),  # a layout of its own on CUDA
          lambda x: x.new_empty(x.shape[0] * (2 if x.device.type == "cuda" else 1)))
_register("per_rank(Tensor x) -> Tensor", lambda x: x[: x.shape[0] // _world["size"]].clone(),
          lambda x: x.new_empty(x.shape[0] // _world["size"], *x.shape[1:]))


def set_world(world: int) -> None:
    """A python_context hook, as vLLM's tensor-parallel size is set for an op to read."""
    _world["size"] = world


def _view(rows, cols, *, offset=0, transposed=False, gap=0):
    """A case as the checker materialises it: a view inside a larger guarded buffer."""
    buffer = torch.randn(16 + (rows + 1) * (cols + gap) + 16)
    if transposed:
        return buffer.as_strided((rows, cols), (1, rows + gap), 16 + offset)
    return buffer.as_strided((rows, cols), (cols + gap, 1), 16 + offset)


def _cases():
    for rows in (0, 1, 2, 8, 9, 120):
        for cols in (1, 4):
            yield _view(rows, cols)
            yield _view(rows, cols, offset=3, gap=2)
            yield _view(rows, cols, transposed=True)


def _real(qualname, args, symbolic):
    return bridge._FakeRun(bridge._resolve(qualname, ""), args, symbolic, None).result


def _answers_match(qualname, make_args):
    """Every case's answers, static and symbolic, as the real fakes give them."""
    for x in _cases():
        args = make_args(x)
        for symbolic in (False, True):
            assert bridge.fake_call(qualname, "", args, symbolic) == _real(qualname, args, symbolic), \
                (qualname, tuple(x.shape), x.stride(), symbolic)


def _traces(qualname):
    return [t for k, c in bridge._fake_classes._classes.items() if k[0] == qualname for t in c.traces]


def _rows_of(trace):
    """The number of rows of x that a trace holds for (None: any its guards admit)."""
    (rows,) = [e for arg, on_base, prop, dim, e in trace.positions
               if (arg, on_base, prop, dim) == (0, False, "size", 0)]
    return rows if isinstance(rows, int) else None


def test_reused_traces_answer_as_the_real_fakes():
    _answers_match("opc_pytest_fc::rows", lambda x: [x])
    _answers_match("opc_pytest_fc::prefix", lambda x: [x, 2])  # a view of its input
    _answers_match("opc_pytest_fc::eight", lambda x: [x])  # a guard pins 8 rows
    _answers_match("opc_pytest_fc::into", lambda x: [x, x.clone()])
    _answers_match("opc_pytest_fc::count", lambda x: [x])  # an int computed from a size
    out = torch.zeros(40)  # two views of one buffer
    _answers_match("opc_pytest_fc::into", lambda x: [out[:20], out[20:]])
    # 36 cases an op, fewer traces: sizes 0 and 1, strides of 1 and the pinned 8 split them.
    assert 0 < len(_traces("opc_pytest_fc::rows")) < 20


def test_a_fake_asking_the_shape_env_for_a_hint_is_never_reused():
    _answers_match("opc_pytest_fc::asks", lambda x: [x])
    # Only the cases of 0 or 1 rows, which PyTorch keeps concrete (no hint asked), are reused.
    assert {_rows_of(t) for t in _traces("opc_pytest_fc::asks")} == {0, 1}


def test_a_fake_reading_a_hint_directly_is_caught_by_a_spot_check():
    qualname = "opc_pytest_fc::tuned"
    small, large = [_view(5, 4)], [_view(200, 4)]
    for symbolic in (False, True):  # as the checker calls it: the symbolic run is learnt
        assert bridge.fake_call(qualname, "", small, symbolic)["returns"][0]["sizes"] == [5]
    wrong = [bridge.fake_call(qualname, "", large)["returns"][0]["sizes"]
             for _ in range(fake_classes.SPOT_CHECKS[0])]
    # The reuses before the first spot check answer from the trace of 5 rows; the check
    # sees the real fake disagree and retires the class.
    assert wrong[:-1] == [[200]] * (len(wrong) - 1) and wrong[-1] == [1]
    assert _traces(qualname) == []
    _answers_match(qualname, lambda x: [x])


def test_a_fake_that_raises_runs_for_every_case():
    first = bridge.fake_call("opc_pytest_fc::raises", "", [_view(5, 3)], True)
    second = bridge.fake_call("opc_pytest_fc::raises", "", [_view(6, 3)], True)
    assert first["error"] == "ValueError: three columns and 5 rows"
    assert second["error"] == "ValueError: three columns and 6 rows"
    _answers_match("opc_pytest_fc::raises", lambda x: [x])


def test_context_values_are_part_of_the_class():
    for world in (1, 2, 4, 1):
        bridge.set_context("test_fake_classes:set_world", {"world": world})
        for symbolic in (False, True):
            result = bridge.fake_call("opc_pytest_fc::per_rank", "", [_view(8, 4)], symbolic)
            assert result["returns"][0]["sizes"] == [8 // world, 4]


def test_context_values_a_cpp_op_reads_are_part_of_the_class():
    # A C++ op reads them from ops/sim_context.h: the checker sets them there and tells the
    # bridge with hook "", which calls nothing.
    for world in (1, 2, 4, 1):
        _world["size"] = world
        bridge.set_context("", {"world": world})
        for symbolic in (False, True):
            result = bridge.fake_call("opc_pytest_fc::per_rank", "", [_view(8, 4)], symbolic)
            assert result["returns"][0]["sizes"] == [8 // world, 4]


def test_the_device_a_fake_claims_is_part_of_the_class():
    # A `device: cuda` contract's fakes claim CUDA (no GPU needed): a trace learnt on CPU
    # fakes never answers for them, nor the other way round.
    for devices in ({}, {0: "cuda"}, {}, {0: "cuda"}):
        for symbolic in (False, True):
            result = bridge.fake_call("opc_pytest_fc::per_device", "", [_view(8, 4)], symbolic, None, devices)
            assert result["returns"][0]["sizes"] == [16 if devices else 8]
