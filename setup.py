"""pip's way in: builds opcontract with CMake against the torch of the venv that runs pip.

    pip install --no-build-isolation .            # in a venv that has torch (>= 2.11)
    pip install --no-build-isolation opcontract-0.1.0.tar.gz

As vLLM's own source build does, setuptools drives CMake and build isolation is off, so the
build sees the venv's torch: its LibTorch (``torch.utils.cmake_prefix_path``) is the one
opcontract links, and its Python is the one it embeds. The CMake install (binary, libraries,
the bridge's Python half under share/) goes into the package as ``opcontract/_native``; the
``opcontract`` console script runs that binary, and the pytest plugin is registered under
``pytest11``. Tests are not built (``-DBUILD_TESTING=OFF``).

Needs cmake, ninja (or make), a C++20 compiler, and Debian's librapidcheck-dev and
libyaml-cpp-dev; each missing one is named in the error, with the apt-get line. The CMake
build directory is build/pip/<python and torch>/ in the source tree, so a second install
only rebuilds what changed; ccache is used when installed. Knobs: OPCONTRACT_BUILD_JOBS
(parallel jobs, default the CPU count), CMAKE_ARGS (extra configure arguments, e.g.
-DTORCH_CUDA_ARCH_LIST=9.0), CCACHE_BASEDIR (default the source root).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MIN_TORCH = (2, 11)


class BuildError(Exception):
    """A missing prerequisite or a failed CMake step, in words a user can act on."""


def version() -> str:
    """opcontract's version, from CMakeLists.txt's project() line."""
    m = re.search(r"project\(opcontract VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        raise BuildError("CMakeLists.txt has no `project(opcontract VERSION x.y.z`")
    return m.group(1)


def torch_cmake_dir() -> tuple[str, str]:
    """(torch version, its share/cmake/Torch) of the torch this Python imports; BuildError if none."""
    try:
        with warnings.catch_warnings():  # e.g. "Failed to initialize NumPy" in a venv without it
            warnings.simplefilter("ignore")
            import torch  # noqa: PLC0415  (the build's one reason to import it)
    except ImportError as e:
        isolated = "pip-build-env" in os.environ.get("PYTHONPATH", "") or "pip-build-env" in sys.prefix
        raise BuildError(
            f"opcontract builds against the torch of the Python that builds it ({sys.executable}), "
            f"and it cannot import torch ({e}). Install torch in your venv first (e.g. pip install "
            "torch==2.13.0), then build without build isolation so that pip uses it: "
            "pip install --no-build-isolation ." +
            (" (this build runs in pip's isolated build environment: --no-build-isolation is missing)"
             if isolated else "")) from None
    numbers = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    if numbers < MIN_TORCH:
        raise BuildError(f"opcontract needs torch {'.'.join(map(str, MIN_TORCH))} or newer; "
                         f"{sys.executable} has torch {torch.__version__}")
    cmake_dir = Path(torch.utils.cmake_prefix_path) / "Torch"
    if not (cmake_dir / "TorchConfig.cmake").is_file():
        raise BuildError(f"torch {torch.__version__} has no TorchConfig.cmake in {cmake_dir}")
    return torch.__version__, str(cmake_dir)


def build_tools(env: dict[str, str]) -> tuple[str, str]:
    """(cmake, CMake generator) to build with; BuildError naming what to install if one is missing."""
    path = env.get("PATH", "")
    missing = []
    cmake = shutil.which("cmake", path=path)
    if not cmake:
        missing.append("cmake")
    if shutil.which("ninja", path=path):
        generator = "Ninja"
    elif shutil.which("make", path=path):
        generator = "Unix Makefiles"
    else:
        generator = ""
        missing.append("ninja-build")
    compiler = env.get("CXX") or shutil.which("c++", path=path) or shutil.which("g++", path=path)
    if not compiler:
        missing.append("g++")
    if missing:
        raise BuildError(f"opcontract's build needs {', '.join(missing)}, not found on PATH. "
                         f"On Debian or Ubuntu: sudo apt-get install {' '.join(missing)}")
    return cmake, generator


def build_dir(torch_version: str, torch_dir: str) -> Path:
    """build/pip/<python>-torch<version>-<hash of venv and LibTorch>: one per venv and torch
    (sys.prefix, not the interpreter's name: python, python3 and pip's own are the same venv)."""
    key = hashlib.sha256(f"{sys.prefix}\n{torch_dir}".encode()).hexdigest()[:10]
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-torch{torch_version.replace('+', '_')}-{key}"
    return ROOT / "build" / "pip" / tag


def cmake_build(prefix: Path, env: dict[str, str] | None = None) -> None:
    """Configures, builds and installs opcontract into ``prefix`` (bin/, lib/, share/)."""
    env = dict(os.environ if env is None else env)
    torch_version, torch_dir = torch_cmake_dir()
    cmake, generator = build_tools(env)
    build = build_dir(torch_version, torch_dir)
    env.setdefault("CCACHE_BASEDIR", str(ROOT))
    # Every compile uses a precompiled header, which ccache caches only with these.
    env.setdefault("CCACHE_SLOPPINESS", "pch_defines,time_macros,include_file_mtime,include_file_ctime")
    configure = [cmake, "-S", str(ROOT), "-B", str(build), "-G", generator,
                 "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF", f"-DTorch_DIR={torch_dir}",
                 f"-DOPC_PYTHON_EXECUTABLE={sys.executable}", "-DCMAKE_INSTALL_LIBDIR=lib",
                 *shlex.split(env.get("CMAKE_ARGS", ""))]
    jobs = env.get("OPCONTRACT_BUILD_JOBS") or str(os.cpu_count() or 1)
    steps = [("configuring", configure),
             ("building", [cmake, "--build", str(build), "-j", jobs]),
             ("installing", [cmake, "--install", str(build), "--prefix", str(prefix)])]
    for what, command in steps:
        print(f"[opcontract] {what}: {shlex.join(command)}", flush=True)
        if subprocess.run(command, env=env).returncode != 0:
            raise BuildError(f"{what} opcontract failed (CMake's message is above); the build is in {build}")


def main() -> None:
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    class CMakeBuild(build_ext):
        """Builds the one 'extension', opcontract/_native, with CMake instead of a compiler call."""

        def build_extension(self, ext: Extension) -> None:
            package_dir = Path(self.get_ext_fullpath(ext.name)).parent
            try:
                cmake_build(package_dir / "_native")
            except BuildError as e:
                sys.exit(f"error: {e}")

    setup(
        version=version(),
        package_dir={"": "python"},
        packages=["opcontract"],
        # A placeholder: build_ext above runs CMake. It also makes the wheel platform-specific.
        ext_modules=[Extension("opcontract._native", sources=[])],
        cmdclass={"build_ext": CMakeBuild},
        # setuptools' own build folder, beside CMake's in build/pip/.
        options={"build": {"build_base": str(Path("build") / "pip" / "setuptools")}},
    )


if __name__ == "__main__":
    main()
