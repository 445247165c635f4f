"""pytest plugin: opcontract's contracts as pytest items.

    pytest --opcontract contracts/vllm/                      # every contract in the folder
    pytest --opcontract contracts/vllm/ -k rms_norm          # one op
    pytest --opcontract contracts/vllm/ -k compiled          # one mode of every op
    pytest --opcontract contracts/vllm/ --opcontract-cases 50 --opcontract-import my_ops

Registered through the ``pytest11`` entry point when opcontract is pip-installed; inert
unless ``--opcontract`` is given. With it, every ``*.yaml``/``*.yml`` file pytest collects
that has a top-level ``op:`` key is a contract (one named on the command line is collected
either way), and so is every contract listed by

- a ``conftest.py`` variable ``opcontract_contracts = ["path", ...]`` (relative to that
  conftest's folder), collected with that folder;
- the ini option ``opcontract_contracts`` (relative to the ini file), collected with the
  ini file's folder.

A contract gives five items, named after its op (``::`` written ``.``, as in
``torch.ops._C.rms_norm``)::

    contracts/vllm/rms_norm.yaml::_C.rms_norm[contract]    findings of no mode (schema, branches)
    contracts/vllm/rms_norm.yaml::_C.rms_norm[fake]        one per mode
    contracts/vllm/rms_norm.yaml::_C.rms_norm[eager]
    contracts/vllm/rms_norm.yaml::_C.rms_norm[compiled]
    contracts/vllm/rms_norm.yaml::_C.rms_norm[cudagraph]

plus ``[regressions]`` with ``--opcontract-regressions``. Each contract is checked by one
run of the CLI (``opcontract check CONTRACT --json FILE``), at its first item, shared by the
others; when some of its mode items are deselected (``-k``), the run asks only for the
selected modes (``--modes``), unless ``--opcontract-modes`` says which. What each item's
outcome is: ``opcontract.results``. The CLI's text report is attached to the contract item.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from .results import MODES, Entry, Outcome, ResultsError, contract_outcome, mode_outcome, parse_results, \
    regressions_outcome

CONTRACT_SUFFIXES = (".yaml", ".yml")
# A contract's top-level `op: ns::name` line (quotes and a trailing comment allowed).
_OP_LINE = re.compile(r"""^op:[ \t]*(["']?)([^"'#\s]+)\1[ \t]*(?:#.*)?$""", re.MULTILINE)


class OpcontractWarning(UserWarning):
    """A warning of opcontract's check (e.g. a declared branch no case reached)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("opcontract", "opcontract: contracts of custom ops as test items")
    group.addoption("--opcontract", action="store_true", default=False,
                    help="collect opcontract contract files (*.yaml with a top-level op:) as test items")
    group.addoption("--opcontract-binary", metavar="PATH", default=None,
                    help="the opcontract binary (default: $OPCONTRACT_BINARY, else the opcontract "
                         "installed beside this Python, else the one on PATH)")
    group.addoption("--opcontract-cases", metavar="N", type=int, default=None,
                    help="generated cases per contract (check --cases; default the CLI's, 100)")
    group.addoption("--opcontract-seed", metavar="S", type=int, default=None, help="seed (check --seed)")
    group.addoption("--opcontract-modes", metavar="M,...", default=None,
                    help="modes to run besides eager (check --modes; default: the selected items' modes)")
    group.addoption("--opcontract-load", metavar="LIB", action="append", default=[],
                    help="an op library to load (check --load); repeatable")
    group.addoption("--opcontract-import", metavar="MODULE", action="append", default=[],
                    help="a Python module that registers ops (check --import); repeatable")
    group.addoption("--opcontract-no-python", action="store_true", default=False,
                    help="the C++ paths only (check --no-python)")
    group.addoption("--opcontract-regressions", action="store_true", default=False,
                    help="also a [regressions] item per contract (check --regressions)")
    parser.addini("opcontract_contracts", type="paths", default=[],
                  help="contract files or folders, relative to this ini file, collected with its folder "
                       "under --opcontract")


@dataclass
class CliRun:
    """One `opcontract check` run: its entries, or the error that left none."""

    command: list[str]
    entries: list[Entry] = field(default_factory=list)
    error: str = ""
    output: str = ""


@dataclass
class State:
    """The session's settings and each contract's runs, cached by (path, regressions)."""

    binary: str
    common: list[str]
    modes: str | None
    cwd: Path
    runs: dict[tuple[Path, bool], CliRun] = field(default_factory=dict)


_STATE = pytest.StashKey[State]()


def find_binary(config: pytest.Config) -> str:
    """--opcontract-binary, $OPCONTRACT_BINARY, this Python's bin/opcontract, PATH; else a usage error."""
    given = config.getoption("opcontract_binary") or os.environ.get("OPCONTRACT_BINARY")
    if given:
        where = "--opcontract-binary" if config.getoption("opcontract_binary") else "$OPCONTRACT_BINARY"
        path = shutil.which(given) or (given if os.access(given, os.X_OK) and Path(given).is_file() else None)
        if not path:
            raise pytest.UsageError(f"{where}: {given} is not an executable file")
        return os.path.abspath(path)  # tests may run in other folders
    beside = Path(sys.executable).parent / "opcontract"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    on_path = shutil.which("opcontract")
    if on_path:
        return on_path
    raise pytest.UsageError(
        "--opcontract: no opcontract binary found (none installed beside this Python, none on PATH): "
        "pip install --no-build-isolation <opcontract checkout> into this venv, or pass "
        "--opcontract-binary PATH (or set OPCONTRACT_BINARY)")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("opcontract"):
        return
    common: list[str] = []
    if config.getoption("opcontract_cases") is not None:
        common += ["--cases", str(config.getoption("opcontract_cases"))]
    if config.getoption("opcontract_seed") is not None:
        common += ["--seed", str(config.getoption("opcontract_seed"))]
    for lib in config.getoption("opcontract_load"):
        common += ["--load", lib]
    for module in config.getoption("opcontract_import"):
        common += ["--import", module]
    if config.getoption("opcontract_no_python"):
        common.append("--no-python")
    config.stash[_STATE] = State(binary=find_binary(config), common=common,
                                 modes=config.getoption("opcontract_modes"),
                                 cwd=config.invocation_params.dir)


def _state(config: pytest.Config) -> State | None:
    return config.stash.get(_STATE, None)


def op_of(path: Path) -> tuple[str, int] | None:
    """The contract's `op:` and its line (0-based), or None when the file has no top-level op line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 20)
    except OSError:
        return None
    m = _OP_LINE.search(head)
    return (m.group(2), head.count("\n", 0, m.start())) if m else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = _state(parent.config)
    if state is None:
        return None
    if file_path.suffix in CONTRACT_SUFFIXES:
        if op_of(file_path) is None and not parent.session.isinitpath(file_path):
            return None
        return ContractFile.from_parent(parent, path=file_path)
    listed = _listed_contracts(parent.config, file_path)
    if listed is not None:
        return ContractList.from_parent(parent, path=file_path, listed=listed)
    return None


def _listed_contracts(config: pytest.Config, file_path: Path) -> object:
    """What a conftest.py's variable or the ini file's option `opcontract_contracts` lists (None
    when nothing): paths as given, checked by ContractList."""
    if file_path.name == "conftest.py":
        for plugin in config.pluginmanager.get_plugins():
            module_file = getattr(plugin, "__file__", None)
            if module_file and Path(module_file).resolve() == file_path.resolve():
                return getattr(plugin, "opcontract_contracts", None)
        return None
    if config.inipath is not None and file_path.resolve() == config.inipath.resolve():
        return config.getini("opcontract_contracts") or None
    return None


class ContractList(pytest.File):
    """A conftest.py or ini file that lists contracts (relative to its folder): collects each."""

    def __init__(self, *, listed: object, **kwargs) -> None:
        super().__init__(**kwargs)
        self.listed = listed

    def collect(self) -> Iterator[pytest.Collector]:
        listed = self.listed
        if isinstance(listed, (str, os.PathLike)) or not isinstance(listed, (list, tuple)) or \
                not all(isinstance(p, (str, os.PathLike)) for p in listed):
            raise self.CollectError(f"{self.path}: opcontract_contracts must be a list of paths, not {listed!r}")
        for given in listed:
            path = Path(os.path.normpath(self.path.parent / given))
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.suffix in CONTRACT_SUFFIXES and op_of(p))
            elif path.is_file():
                files = [path]
            else:
                raise self.CollectError(f"{self.path}: opcontract_contracts lists {path}, which does not exist")
            for f in files:
                yield ContractFile.from_parent(self, path=f)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A contract collected twice (its folder and a list naming it) keeps its first items; the
    others are reported as deselected."""
    if _state(config) is None:
        return
    seen: set[str] = set()
    kept, twice = [], []
    for item in items:
        if isinstance(item, ContractItem):
            if item.nodeid in seen:
                twice.append(item)
                continue
            seen.add(item.nodeid)
        kept.append(item)
    if twice:
        config.hook.pytest_deselected(items=twice)
        items[:] = kept


class ContractFile(pytest.File):
    """A contract file: its contract item, one item per mode, [regressions] if asked for."""

    def collect(self) -> Iterator[ContractItem]:
        op, line = op_of(self.path) or (self.path.stem, 0)
        parts = ["contract", *MODES]
        if self.config.getoption("opcontract_regressions"):
            parts.append("regressions")
        for part in parts:
            yield ContractItem.from_parent(self, name=f"{op.replace('::', '.')}[{part}]", part=part, line=line)


class ContractFailure(Exception):
    """An item's failure: its text is the whole report (no Python traceback)."""


class ContractItem(pytest.Item):
    def __init__(self, *, part: str, line: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.part = part
        self.line = line  # the contract's op: line, where its skips are reported

    def runtest(self) -> None:
        state = _state(self.config)
        assert state is not None
        regressions = self.part == "regressions"
        run = _run_for(state, self, regressions)
        if self.part == "contract" and run.output:
            self.add_report_section("call", "opcontract", run.output)
        if run.error:
            raise ContractFailure(f"{run.error}\ncommand: {shlex.join(run.command)}")
        if regressions:
            outcome = regressions_outcome(run.entries)
        else:
            entry = run.entries[0]
            if self.part == "contract":
                for w in entry.get("warnings", []):
                    warnings.warn(OpcontractWarning(f"{entry.get('file')}: {w}"))
                outcome = contract_outcome(entry)
            else:
                outcome = mode_outcome(entry, self.part)
        _apply(outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None):
        if isinstance(excinfo.value, (ContractFailure, pytest.xfail.Exception)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, self.line, f"opcontract {self.name}"


def _apply(outcome: Outcome) -> None:
    if outcome.kind == "fail":
        raise ContractFailure(outcome.text)
    if outcome.kind == "xfail":
        pytest.xfail(outcome.text)
    if outcome.kind == "skip":
        # Reported at the contract file (the item's location), not at this line.
        raise pytest.skip.Exception(outcome.text, _use_item_location=True)


def _selected_modes(item: ContractItem) -> str | None:
    """--modes for the run: the user's, else the selected mode items' when some are deselected."""
    state = _state(item.config)
    assert state is not None
    if state.modes:
        return state.modes
    selected = {i.part for i in item.session.items if isinstance(i, ContractItem) and i.path == item.path}
    if all(m in selected for m in MODES):
        return None
    return ",".join(m for m in MODES if m in selected and m != "eager") or "eager"


def _run_for(state: State, item: ContractItem, regressions: bool) -> CliRun:
    key = (item.path.resolve(), regressions)
    if key not in state.runs:
        modes = state.modes if regressions else _selected_modes(item)
        state.runs[key] = run_cli(state, item.path, modes, regressions)
    return state.runs[key]


def run_cli(state: State, contract: Path, modes: str | None, regressions: bool) -> CliRun:
    """Runs `opcontract check` on one contract and reads its JSON; never raises for the CLI's failures."""
    try:
        shown = str(contract.relative_to(state.cwd))
    except ValueError:
        shown = str(contract)
    command = [state.binary, "check", shown, *state.common]
    if modes:
        command += ["--modes", modes]
    if regressions:
        command.append("--regressions")
    with tempfile.TemporaryDirectory(prefix="opcontract-pytest-") as tmp:
        json_path = Path(tmp) / "results.json"
        try:
            proc = subprocess.run([*command, "--json", str(json_path)], cwd=state.cwd, capture_output=True,
                                  text=True, errors="replace")
        except OSError as e:
            return CliRun(command, error=f"could not run {state.binary}: {e}")
        output = proc.stdout + (f"\n--- stderr ---\n{proc.stderr}" if proc.stderr.strip() else "")
        if not json_path.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-20:]) or "(nothing on stderr)"
            return CliRun(command, error=f"opcontract exited {proc.returncode} without writing results:\n{tail}",
                          output=output)
        try:
            entries = parse_results(json_path.read_text(encoding="utf-8", errors="replace"),
                                    f"opcontract's results (exit {proc.returncode})")
        except ResultsError as e:
            return CliRun(command, error=str(e), output=output)
    if not regressions and len(entries) != 1:
        return CliRun(command, error=f"expected one result for {shown}, got {len(entries)}", output=output)
    if proc.returncode not in (0, 1, 2):
        return CliRun(command, error=f"opcontract exited {proc.returncode}:\n{proc.stderr.strip()}", output=output)
    return CliRun(command, entries=entries, output=output)
