"""``python -m vmjit`` and the ``vmjit`` command pip installs: vmjit's
command line (``vmjit run PROG ARGS``, ``vmjit dis``, ...; docs/command.md),
which is the C++ ``vmjit`` executable, run with the same arguments.

The executable is looked for beside the package: in ``vmjit/bin/`` (the
wheel ships it there), in the build tree (``build/bin/vmjit`` for the
package in ``build/python/vmjit``) and in the install prefix
(``PREFIX/bin/vmjit`` for the package in
``PREFIX/lib/pythonX.Y/site-packages/vmjit``, as ``cmake --install`` lays
them out). Where none is there, one line says where to get it and the exit
status is 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

_PACKAGE = Path(__file__).resolve().parent


def _candidates() -> List[Path]:
    """Where the executable may be, the package's own copy first."""
    places = [_PACKAGE / "bin", _PACKAGE.parent.parent / "bin"]
    if len(_PACKAGE.parents) > 3:
        places.append(_PACKAGE.parents[3] / "bin")
    return [p / "vmjit" for p in places]


def _is_executable(path: Path) -> bool:
    """Whether `path` is an executable ELF file: the C++ command, not a
    script (pip's ``vmjit`` script, which runs this module, lies in a
    venv's bin/ too)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return False
    return magic == b"\x7fELF" and os.access(path, os.X_OK)


def find_executable() -> Optional[Path]:
    """The C++ ``vmjit`` executable that belongs to this package, or
    None."""
    for path in _candidates():
        if _is_executable(path):
            return path
    return None


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the ``vmjit`` command with `argv` (default: this process's
    arguments) in place of this process; returns 2 if it cannot."""
    args = sys.argv[1:] if argv is None else argv
    exe = find_executable()
    if exe is None:
        print("vmjit: the vmjit command is not installed with this package "
              "(looked for %s): build it with scripts/build.sh "
              "(build/bin/vmjit) or install the package with pip, which "
              "ships it" % ", ".join(str(p) for p in _candidates()),
              file=sys.stderr)
        return 2
    try:
        os.execv(exe, ["vmjit", *args])
    except OSError as e:
        print("vmjit: cannot run %s: %s" % (exe, e.strerror), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
