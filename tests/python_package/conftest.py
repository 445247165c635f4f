"""Fixtures for the tests of the Python package (python/opcontract): a fake opcontract CLI.

``fake_cli`` is an executable script standing in for ``opcontract check``: for each
contract it is asked about it writes the canned results a test gave for that file's name
(``fake_cli.answer("x.yaml", entries=[...])``), or no JSON, or text that is not JSON, with
the exit code and stderr given, and it logs every command line it got (``fake_cli.calls()``).
Nothing is built: the plugin's own logic is tested against it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

FAKE_CLI = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_OPCONTRACT_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
answers = json.load(open(os.environ["FAKE_OPCONTRACT_ANSWERS"]))
contract = os.path.basename(args[1])
key = contract + (":regressions" if "--regressions" in args else "")
answer = answers.get(key, {{"exit": 2, "stderr": "fake: no answer for " + key}})
if "json" in answer or "raw" in answer:
    out = args[args.index("--json") + 1]
    with open(out, "w") as f:
        f.write(answer["raw"] if "raw" in answer else json.dumps(answer["json"]))
sys.stdout.write(answer.get("stdout", ""))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("exit", 0))
"""


def mode(status: str, reason: str = "", cases: int = 100) -> dict[str, Any]:
    m: dict[str, Any] = {"status": status, "cases": cases if status != "not_run" else 0, "clauses": []}
    if reason:
        m["reason"] = reason
    return m


def finding(clause: str, mode_name: str, message: str, known: str = "", case: Any = None) -> dict[str, Any]:
    f: dict[str, Any] = {"clause": clause, "mode": mode_name or None, "message": message, "target": "t",
                         "seed": 20261202,
                         "cases_tried": 3, "shrink_steps": 5,
                         "replay": "opcontract check c.yaml --target t --seed 20261202 --cases 3"}
    if case is not None:
        f["case"] = case
    if known:
        f["known"] = known
    return f


def entry(file: str, op: str = "t::op", verdict: str = "pass", modes: dict[str, Any] | None = None,
          findings: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    all_pass = {m: mode("pass") for m in ("fake", "eager", "compiled")}
    all_pass["cudagraph"] = mode("not_run", "no CUDA device")
    e = {"file": file, "op": op, "target": op, "verdict": verdict, "seed": 20261202, "cases": 100,
         "modes": {**all_pass, **(modes or {})}, "branches": {}, "warnings": [], "findings": findings or []}
    if "error" in extra:  # the check's error, as results list it
        extra["errors"] = [extra.pop("error")]
    e.update(extra)
    return e


class FakeCli:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "opcontract"
        self.path.write_text(FAKE_CLI.format(python=sys.executable))
        self.path.chmod(0o755)
        self.log = folder / "calls.jsonl"
        self.answers_file = folder / "answers.json"
        self.answers: dict[str, Any] = {}
        self._save()

    def _save(self) -> None:
        self.answers_file.write_text(json.dumps(self.answers))

    def answer(self, contract: str, entries: list[dict[str, Any]] | None = None, *, exit: int = 0,
               raw: str | None = None, stderr: str = "", stdout: str = "", regressions: bool = False) -> None:
        a: dict[str, Any] = {"exit": exit, "stderr": stderr, "stdout": stdout}
        if raw is not None:
            a["raw"] = raw
        elif entries is not None:
            a["json"] = {"version": 2, "contracts": entries}
        self.answers[contract + (":regressions" if regressions else "")] = a
        self._save()

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCli:
    cli = FakeCli(tmp_path / "fake-bin")
    monkeypatch.setenv("FAKE_OPCONTRACT_LOG", str(cli.log))
    monkeypatch.setenv("FAKE_OPCONTRACT_ANSWERS", str(cli.answers_file))
    monkeypatch.setenv("OPCONTRACT_BINARY", str(cli.path))
    # The plugin under test is loaded with -p, the same whether or not it is also installed.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return cli


def write_contract(folder: Path, name: str, op: str | None = "t::op") -> Path:
    """A contract file as the plugin sees it (only its `op:` line matters to the fake CLI)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    op_line = f"op: {op}\n" if op else ""
    path.write_text(f'# a contract for the fake CLI\n{op_line}schema: "f(Tensor x) -> Tensor"\n')
    return path


@pytest.fixture
def run_plugin(pytester: pytest.Pytester, fake_cli: FakeCli, monkeypatch: pytest.MonkeyPatch):
    """Runs pytest in pytester's folder with the plugin loaded; returns its RunResult.

    The inner pytest does not see a CI environment (pytest then prints each failure's whole
    message in its summary as well), so that its output is the same wherever the tests run.
    """
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-p", "opcontract.pytest_plugin", "-p", "no:cacheprovider", *args)
    return run


def env_without_opcontract(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No OPCONTRACT_BINARY, no opcontract beside this Python or on PATH."""
    monkeypatch.delenv("OPCONTRACT_BINARY", raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
