"""Tests of setup.py's checks before it builds: each missing prerequisite is named clearly.

Run: .venv/bin/python -m pytest tests/python_package -q
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup_py() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("opcontract_setup_py", ROOT / "setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines functions only: setup() runs under __main__
    return module


def test_the_version_is_cmakes(setup_py):
    m = re.search(r"project\(opcontract VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert m and setup_py.version() == m.group(1)


def test_no_torch_says_to_install_it_and_build_without_isolation(setup_py, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(setup_py.BuildError) as e:
        setup_py.torch_cmake_dir()
    assert "cannot import torch" in str(e.value)
    assert "pip install --no-build-isolation ." in str(e.value)


def test_an_old_torch_is_refused(setup_py, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.10.1+cpu"))
    with pytest.raises(setup_py.BuildError, match=r"needs torch 2\.11 or newer; .* has torch 2\.10\.1\+cpu"):
        setup_py.torch_cmake_dir()


def test_missing_build_tools_are_named_with_the_apt_get_line(setup_py, tmp_path):
    with pytest.raises(setup_py.BuildError) as e:
        setup_py.build_tools({"PATH": str(tmp_path)})
    assert "needs cmake, ninja-build, g++" in str(e.value)
    assert "sudo apt-get install cmake ninja-build g++" in str(e.value)


def test_make_stands_in_for_ninja(setup_py, tmp_path):
    for tool in ("cmake", "make", "c++"):
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    assert setup_py.build_tools({"PATH": str(tmp_path)}) == (str(tmp_path / "cmake"), "Unix Makefiles")


def test_one_build_folder_per_interpreter_and_torch(setup_py, monkeypatch):
    a = setup_py.build_dir("2.13.0+cpu", "/v1/torch/share/cmake/Torch")
    assert a.parent == ROOT / "build" / "pip" and a.name.startswith(f"py{sys.version_info[0]}{sys.version_info[1]}-torch2.13.0_cpu-")
    assert a == setup_py.build_dir("2.13.0+cpu", "/v1/torch/share/cmake/Torch")
    assert a != setup_py.build_dir("2.13.0+cpu", "/v2/torch/share/cmake/Torch")


@pytest.mark.skipif(not shutil.which("cmake"), reason="needs cmake")
def test_cmake_names_the_debian_packages_of_missing_libraries(tmp_path):
    proc = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"),
                           "-DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())  # CMake wraps its messages
    assert "opcontract needs libyaml-cpp-dev librapidcheck-dev" in text
    assert "sudo apt-get install libyaml-cpp-dev librapidcheck-dev" in text
