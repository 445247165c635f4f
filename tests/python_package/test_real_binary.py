"""The pytest plugin against the real opcontract binary, on one bundled contract.

Runs the CLI on contracts/vllm/gelu_and_mul.yaml (a port with a known eager finding) and
pytest with the plugin on the same contract and options, and checks that each item's
outcome is what the CLI's JSON says: a mode that ran and held passes, one not run skips,
one whose findings are all known is an xfail; the contract item passes. Skipped unless
$OPCONTRACT_BINARY names the binary (ctest sets it) or build/opcontract exists.

Run: OPCONTRACT_BINARY=build/opcontract .venv/bin/python -m pytest tests/python_package -q
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "vllm" / "gelu_and_mul.yaml"
# The C++ modes only (--no-python) keep this to seconds; the embedded Python's modes are
# what scripts/pip-check runs through the installed package.
OPTIONS = ["--cases", "60", "--no-python"]


def real_binary() -> str | None:
    given = os.environ.get("OPCONTRACT_BINARY")
    if given:
        return str(Path(given).resolve())  # the tests run pytest in other folders
    built = ROOT / "build" / "opcontract"
    return str(built) if built.is_file() else None


BINARY = real_binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="no opcontract binary: set OPCONTRACT_BINARY or build it")


def expected_from_cli(entry: dict) -> dict[str, str]:
    """item -> the outcome the CLI's entry calls for, by the rules docs/using.md's pytest section gives."""
    expected = {"contract": "passed" if entry["verdict"] == "pass" else "failed"}
    for mode, result in entry["modes"].items():
        findings = [f for f in entry["findings"] if f["mode"] == mode]
        if findings and all(f.get("known") for f in findings):
            expected[mode] = "xfailed"
        elif findings:
            expected[mode] = "failed"
        else:
            expected[mode] = {"pass": "passed", "not_run": "skipped"}[result["status"]]
    return expected


def test_items_say_what_the_cli_says(pytester, tmp_path, monkeypatch):
    results = tmp_path / "cli.json"
    cli = subprocess.run([BINARY, "check", str(CONTRACT), *OPTIONS, "--json", str(results)],
                         cwd=ROOT, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    (entry,) = json.loads(results.read_text())["contracts"]
    expected = expected_from_cli(entry)
    assert expected["eager"] == "xfailed", "the contract's known eager finding is found in these cases"

    monkeypatch.setenv("OPCONTRACT_BINARY", BINARY)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest("-p", "opcontract.pytest_plugin", "-p", "no:cacheprovider", "--opcontract",
                                str(CONTRACT), "--opcontract-cases", "60", "--opcontract-no-python", "-rA")
    got = {}
    for report in result.reprec.getreports("pytest_runtest_logreport"):
        if report.when == "call" or report.outcome == "skipped":
            part = report.nodeid.rsplit("[", 1)[1].rstrip("]")
            got[part] = "xfailed" if hasattr(report, "wasxfail") else report.outcome
    assert got == expected
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*XFAIL*gelu_and_mul.yaml::_C.gelu_and_mul[[]eager[]] - *known: reference (eager): *"])
