"""opcontract from Python: the installed command line, a pytest plugin, and the recorder.

``pip install --no-build-isolation .`` (in a venv that has torch) builds opcontract's C++
checker against that venv's torch and installs it into this package, under ``_native/``
(``bin/opcontract``, its libraries in ``lib/``, the bridge's Python half in
``share/opcontract/python/``). What it puts in place:

- the ``opcontract`` command (``opcontract._launcher``), which runs that binary;
- the pytest plugin (``opcontract.pytest_plugin``, entry point ``pytest11``):
  ``pytest --opcontract contracts/vllm/`` checks each contract as pytest items;
- the recorder (``opcontract.record``, works from the source tree too): the custom-op calls
  of a real program, for ``opcontract admit``, ``check --traffic`` and ``draft --traffic``.

``native_binary()`` is the installed binary's path, or None when this package was not built
(e.g. imported from the source tree).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["native_binary", "NATIVE_DIR"]

# Where setup.py's CMake install puts the binary, its libraries and share/.
NATIVE_DIR = Path(__file__).resolve().parent / "_native"


def native_binary() -> Path | None:
    """The opcontract binary built into this package, or None when there is none."""
    binary = NATIVE_DIR / "bin" / "opcontract"
    return binary if binary.is_file() else None
