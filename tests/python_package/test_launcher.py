"""Tests of the `opcontract` console script (python/opcontract/_launcher.py).

Run: .venv/bin/python -m pytest tests/python_package -q
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from opcontract import _launcher


def test_run_passes_argv_streams_and_exit_code_through(tmp_path: Path):
    fake = tmp_path / "fake-opcontract"
    fake.write_text('#!/bin/sh\necho "argv0=$0"; for a in "$@"; do echo "arg=$a"; done; echo oops >&2; exit 3\n')
    fake.chmod(0o755)
    code = ("import sys; from pathlib import Path; from opcontract._launcher import run; "
            f"run(Path({str(fake)!r}), ['opcontract', 'check', 'a b.yaml', '--cases', '5'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(Path(_launcher.__file__).parents[1])})
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == ["argv0=" + str(fake), "arg=check", "arg=a b.yaml", "arg=--cases", "arg=5"]
    assert proc.stderr == "oops\n"


def test_main_runs_the_built_binary_with_the_scripts_argv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    ran = []
    monkeypatch.setattr(_launcher, "native_binary", lambda: tmp_path / "bin" / "opcontract")
    monkeypatch.setattr(_launcher, "run", lambda binary, argv: ran.append((binary, argv)))
    monkeypatch.setattr(sys, "argv", ["/venv/bin/opcontract", "list", "--load", "x.so"])
    _launcher.main()
    assert ran == [(tmp_path / "bin" / "opcontract", ["/venv/bin/opcontract", "list", "--load", "x.so"])]


def test_main_without_a_built_binary_says_how_to_install_and_exits_2(monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.setattr(_launcher, "native_binary", lambda: None)
    with pytest.raises(SystemExit) as exit_info:
        _launcher.main()
    assert exit_info.value.code == 2
    assert "pip install --no-build-isolation" in capsys.readouterr().err
