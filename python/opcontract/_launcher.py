"""The ``opcontract`` console script: runs the binary built into this package.

pip installs a script ``opcontract`` into the venv's ``bin/`` that calls ``main()``. It
replaces itself with the binary (``os.execv``), so the arguments, the standard streams,
signals and the exit code are the binary's own; the binary's argv[0] is the script's, so the
replay commands it prints name the command as it was typed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import native_binary


def run(binary: Path, argv: list[str]) -> None:
    """Replaces this process with ``binary``, argv[0] first (never returns)."""
    os.execv(str(binary), argv)


def main() -> None:
    binary = native_binary()
    if binary is None:
        sys.stderr.write(
            "opcontract: this Python package has no built binary (looked for "
            f"{Path(__file__).resolve().parent / '_native' / 'bin' / 'opcontract'}): install it with "
            "`pip install --no-build-isolation <opcontract checkout or sdist>` in a venv that has torch\n")
        sys.exit(2)
    run(binary, [sys.argv[0], *sys.argv[1:]])


if __name__ == "__main__":
    main()
