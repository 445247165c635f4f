"""Tests of the custom-op call recorder (python/opcontract/record.py).

Run: .venv/bin/python -m pytest tests/python_package/test_record.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from opcontract import record

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).name

# Test ops, in a namespace of this file's own.
_lib = torch.library.Library("opc_rec", "DEF")
_lib.define("scale(Tensor x, Tensor(a!) out, float alpha, int n, Tensor? w=None) -> ()")
_lib.define("outer(Tensor x) -> Tensor")
_lib.define("pair(Tensor a, Tensor b, Tensor c) -> ()")
_lib.define("multi(Tensor x) -> ()")
_lib.define("multi.scaled(Tensor x, float s, *, int[] dims=[0, 1]) -> ()")
_lib.define("many(Tensor[] xs, int dim=0) -> ()")


def _scale(x, out, alpha, n, w=None):
    out.copy_(x * alpha)


def _outer(x):
    out = torch.empty_like(x)
    torch.ops.opc_rec.scale(x, out, 2.0, 1)  # a custom op called from a custom op's Python body
    return out


_lib.impl("scale", _scale, "CompositeExplicitAutograd")
_lib.impl("outer", _outer, "CompositeExplicitAutograd")
_lib.impl("pair", lambda a, b, c: None, "CompositeExplicitAutograd")
_lib.impl("multi", lambda x: None, "CompositeExplicitAutograd")
_lib.impl("multi.scaled", lambda x, s, dims=(0, 1): None, "CompositeExplicitAutograd")
_lib.impl("many", lambda xs, dim=0: None, "CompositeExplicitAutograd")


@torch.library.register_fake("opc_rec::scale", lib=_lib)
def _scale_fake(x, out, alpha, n, w=None):
    return None


def here() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def read(path: Path) -> tuple[list[dict], list[dict]]:
    """(headers, call lines) of a recording."""
    objs = [json.loads(line) for line in path.read_text().splitlines()]
    return [o for o in objs if "opcontract_recording" in o], [o for o in objs if "op" in o]


def args_of(line: dict) -> dict:
    assert [a["name"] for a in line["args"]] == [a.name for a in getattr(
        torch.ops.opc_rec, line["op"].split("::")[1]).default._schema.arguments]
    return {a["name"]: a for a in line["args"]}


def test_a_calls_geometry_scalars_none_and_int_range_are_recorded_exactly(tmp_path: Path):
    out_file = tmp_path / "calls.jsonl"
    base = torch.zeros(8, 10)
    view = base[2:6, ::2]
    xi = torch.tensor([[5, -3, 7], [2, 100, 0]])
    with record.recording(out_file, program="geometry test"):
        line1 = here(); torch.ops.opc_rec.scale(view, torch.empty(4, 5), 0.5, 3)
        line2 = here(); torch.ops.opc_rec.scale(xi, torch.empty(2, 3, dtype=torch.float64), float("-inf"), n=-1,
                                                w=torch.ones(3, dtype=torch.bfloat16))

    headers, calls = read(out_file)
    assert len(headers) == 1
    h = headers[0]
    assert list(h) == ["opcontract_recording", "torch", "program", "pid", "started"]
    assert (h["opcontract_recording"], h["torch"], h["program"], h["pid"]) == (1, torch.__version__, "geometry test",
                                                                              os.getpid())
    assert h["started"].endswith("Z") and h["started"][10] == "T"
    assert len(calls) == 2
    first, second = calls
    assert list(first) == ["op", "overload", "calls", "site", "args"]
    assert (first["op"], first["overload"], first["calls"]) == ("opc_rec::scale", "default", 1)
    assert first["site"].endswith(f"{THIS}:{line1}") and second["site"].endswith(f"{THIS}:{line2}")
    a = args_of(first)
    assert a["x"] == {"name": "x", "tensor": {
        "dtype": "float32", "shape": [4, 5], "strides": [10, 2], "offset": 20, "storage": 0,
        "storage_bytes": 320, "align": a["x"]["tensor"]["align"], "contiguous": False, "device": "cpu"}}
    ptr = view.data_ptr()
    assert a["x"]["tensor"]["align"] == (64 if ptr % 64 == 0 else min(64, ptr & -ptr))
    assert a["out"]["tensor"]["shape"] == [4, 5] and a["out"]["tensor"]["strides"] == [5, 1]
    assert a["out"]["tensor"]["contiguous"] is True and a["out"]["tensor"]["storage"] == 1
    assert a["out"]["tensor"]["storage_bytes"] == 80
    assert a["alpha"] == {"name": "alpha", "value": 0.5}
    assert a["n"] == {"name": "n", "value": 3}
    assert a["w"] == {"name": "w", "none": True}
    assert "min" not in a["x"]["tensor"] and "min" not in a["out"]["tensor"]

    b = args_of(second)
    assert b["x"]["tensor"]["dtype"] == "int64"
    assert (b["x"]["tensor"]["min"], b["x"]["tensor"]["max"]) == (-3, 100)
    assert b["out"]["tensor"]["dtype"] == "float64"
    assert b["alpha"] == {"name": "alpha", "value": "-inf"}
    assert b["n"] == {"name": "n", "value": -1}
    assert b["w"]["tensor"]["dtype"] == "bfloat16" and b["w"]["tensor"]["shape"] == [3]


def test_views_of_one_buffer_share_a_storage_index_separate_tensors_do_not(tmp_path: Path):
    out_file = tmp_path / "calls.jsonl"
    buf = torch.zeros(2, 16)
    other = torch.zeros(16)
    with record.recording(out_file):
        torch.ops.opc_rec.pair(buf[0], other, buf[1])
    _, calls = read(out_file)
    assert len(calls) == 1
    t = {a["name"]: a["tensor"] for a in calls[0]["args"]}
    assert (t["a"]["storage"], t["a"]["offset"]) == (0, 0)
    assert (t["b"]["storage"], t["b"]["offset"]) == (1, 0)
    assert (t["c"]["storage"], t["c"]["offset"]) == (0, 16)
    assert t["a"]["storage_bytes"] == t["c"]["storage_bytes"] == 128
    assert t["b"]["storage_bytes"] == 64


def test_identical_calls_aggregate_into_one_line_with_merged_ranges(tmp_path: Path):
    out_file = tmp_path / "calls.jsonl"
    out = torch.empty(4)
    with record.recording(out_file):
        for i in range(5):
            torch.ops.opc_rec.scale(torch.tensor([i, 2 * i, 1, 3]), out, 1.0, 2)  # same signature, ranges vary
        torch.ops.opc_rec.scale(torch.tensor([1, 2, 3, 4, 5]), torch.empty(5), 1.0, 2)  # another shape
    _, calls = read(out_file)
    assert len(calls) == 2
    same, other = calls
    assert same["calls"] == 5 and other["calls"] == 1
    x = args_of(same)["x"]["tensor"]
    assert (x["shape"], x["min"], x["max"]) == ([4], 0, 8)
    assert args_of(other)["x"]["tensor"]["shape"] == [5]
    assert record.summary(out_file) == {"opc_rec::scale": 6}


def test_a_nested_custom_op_call_is_recorded_aten_is_not_and_stop_unpatches(tmp_path: Path):
    out_file = tmp_path / "calls.jsonl"
    patched_before = (torch._ops.OpOverload.__call__, torch._ops.OpOverloadPacket.__call__)
    with record.recording(out_file):
        line = here(); torch.ops.opc_rec.outer(torch.ones(3))
        torch.ops.aten.add(torch.ones(2), torch.ones(2))
        torch.ops.aten.mul.Tensor(torch.ones(2), torch.ones(2))
        torch.ops.prims.add(torch.ones(2), torch.ones(2))
    assert (torch._ops.OpOverload.__call__, torch._ops.OpOverloadPacket.__call__) == patched_before
    _, calls = read(out_file)
    assert sorted((c["op"], c["calls"]) for c in calls) == [("opc_rec::outer", 1), ("opc_rec::scale", 1)]
    by_op = {c["op"]: c for c in calls}
    assert by_op["opc_rec::outer"]["site"].endswith(f"{THIS}:{line}")
    # The inner call's site is the line in _outer that makes it.
    assert by_op["opc_rec::scale"]["site"].endswith(f"{THIS}:{_outer.__code__.co_firstlineno + 2}")
    assert args_of(by_op["opc_rec::scale"])["alpha"]["value"] == 2.0


def test_a_compiled_function_records_its_real_calls_only(tmp_path: Path):
    torch._dynamo.reset()
    out_file = tmp_path / "calls.jsonl"

    @torch.compile(backend="aot_eager", fullgraph=True)
    def f(x, out):
        torch.ops.opc_rec.scale(x, out, 3.0, 1)
        return out + 1

    with record.recording(out_file):  # tracing (fake tensors) happens inside, on the first call
        for _ in range(3):
            r = f(torch.ones(6), torch.empty(6))
    assert torch.equal(r, torch.full((6,), 4.0))
    _, calls = read(out_file)
    assert record.summary(out_file) == {"opc_rec::scale": 3}
    assert all(args_of(c)["x"]["tensor"]["shape"] == [6] and args_of(c)["alpha"]["value"] == 3.0 for c in calls)
    torch._dynamo.reset()


def test_a_packet_call_records_the_overload_it_resolves_to_and_tensor_lists(tmp_path: Path):
    out_file = tmp_path / "calls.jsonl"
    buf = torch.zeros(10, dtype=torch.int32)
    with record.recording(out_file):
        torch.ops.opc_rec.multi(torch.ones(2))
        torch.ops.opc_rec.multi(torch.ones(2), 1.5)
        torch.ops.opc_rec.many([buf[:4], torch.ones(3), buf[4:]])
    _, calls = read(out_file)
    assert [(c["op"], c["overload"]) for c in calls] == [
        ("opc_rec::multi", "default"), ("opc_rec::multi", "scaled"), ("opc_rec::many", "default")]
    assert calls[1]["args"] == [calls[0]["args"][0], {"name": "s", "value": 1.5}, {"name": "dims", "value": [0, 1]}]
    xs, dim = calls[2]["args"]
    assert dim == {"name": "dim", "value": 0}
    assert xs["name"] == "xs"
    assert [(t["storage"], t["offset"], t["shape"], t["dtype"]) for t in xs["tensors"]] == [
        (0, 0, [4], "int32"), (1, 0, [3], "float32"), (0, 4, [6], "int32")]
    assert (xs["tensors"][0]["min"], xs["tensors"][0]["max"]) == (0, 0)


SCRIPT = """\
import sys, torch
lib = torch.library.Library("opc_rec_cli", "DEF")
lib.define("twice(Tensor x, int k=2) -> Tensor")
lib.impl("twice", lambda x, k=2: x * k, "CompositeExplicitAutograd")
for i in range(5):
    torch.ops.opc_rec_cli.twice(torch.ones(3))
torch.ops.opc_rec_cli.twice(torch.ones(2, 2), k=3)
print("argv", sys.argv[1:], __name__)
sys.exit(3)
"""


def test_the_command_line_records_a_script_and_propagates_its_exit_code(tmp_path: Path):
    (tmp_path / "prog.py").write_text(SCRIPT)
    out_file = tmp_path / "calls.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    runs = [[sys.executable, "-m", "opcontract.record", "--out", "calls.jsonl", "--", "prog.py", "a", "b c"],
            [sys.executable, "-m", "opcontract.record", "--out", "calls.jsonl", "-m", "prog", "z"]]
    procs = []
    for cmd in runs:  # one after the other: the order of the file's sessions is known
        p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        procs.append(p)
        assert p.returncode == 3, p.stderr
    assert procs[0].stdout == "argv ['a', 'b c'] __main__\n"
    assert procs[1].stdout == "argv ['z'] __main__\n"
    for p in procs:
        assert p.stderr.splitlines()[-1] == "[opcontract.record] 6 calls of 1 custom ops (2 signatures) -> calls.jsonl"

    lines = [json.loads(s) for s in out_file.read_text().splitlines()]
    assert ["opcontract_recording" in o for o in lines] == [True, False, False, True, False, False]
    assert lines[0]["program"] == "prog.py a 'b c'" and lines[3]["program"] == "-m prog z"
    assert lines[0]["pid"] != lines[3]["pid"]
    first = lines[1:3]
    assert [(c["op"], c["calls"], c["site"]) for c in first] == [
        ("opc_rec_cli::twice", 5, "prog.py:6"), ("opc_rec_cli::twice", 1, "prog.py:7")]
    assert first[0]["args"][1] == {"name": "k", "value": 2}  # the default, filled in
    assert first[1]["args"][1] == {"name": "k", "value": 3}
    assert record.summary(out_file) == {"opc_rec_cli::twice": 12}


def test_periodic_flush_writes_delta_lines_that_sum_to_the_true_counts(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(record, "FLUSH_INTERVAL", 0.0)
    monkeypatch.setattr(record, "CHECK_EVERY", 4)
    out_file = tmp_path / "calls.jsonl"
    a, b = torch.ones(3), torch.ones(4)
    record.start(out_file, program="flush test")
    try:
        for i in range(21):
            torch.ops.opc_rec.scale(a if i % 2 else b, torch.empty_like(a if i % 2 else b), 1.0, 1)
        _, on_disk = read(out_file)  # before stop: the flushes at 4, 8, ..., 20 calls
        assert sum(c["calls"] for c in on_disk) == 20
        assert len(on_disk) == 10  # each flush: a delta line for each of the 2 signatures
    finally:
        stats = record.stop()
    assert stats == {"calls": 21, "ops": 1, "signatures": 2, "path": str(out_file)}
    _, calls = read(out_file)
    assert len(calls) == 11
    assert record.summary(out_file) == {"opc_rec::scale": 21}
    per_shape: dict = {}
    for c in calls:
        shape = tuple(args_of(c)["x"]["tensor"]["shape"])
        per_shape[shape] = per_shape.get(shape, 0) + c["calls"]
    assert per_shape == {(3,): 10, (4,): 11}
    # A truncated last line (a killed process) is ignored by summary().
    with open(out_file, "a") as f:
        f.write('{"op": "opc_rec::scale", "overload": "default", "ca')
    assert record.summary(out_file) == {"opc_rec::scale": 21}


def test_a_bad_command_line_exits_2_with_usage(capsys):
    for argv in (["prog.py"], ["--out"], ["--out", "x.jsonl"], ["--bogus", "--out", "x.jsonl", "p.py"]):
        with pytest.raises(SystemExit) as e:
            record.main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "usage: python -m opcontract.record --out FILE" in err
    assert not Path("x.jsonl").exists()
