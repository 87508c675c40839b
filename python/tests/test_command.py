"""vmjit's command line from the package: ``python -m vmjit`` runs the C++
``vmjit`` command that belongs to the package (the build tree's, or the
one the wheel ships), and says where to get it when there is none."""

import pathlib
import re
import subprocess
import sys

import pytest

import vmjit
import vmjit.__main__ as command

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "vmjit", *args],
                          capture_output=True, text=True, timeout=120)


def test_version():
    r = _run("--version")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("vmjit %s\n" % vmjit.__version__), r.stdout


@pytest.mark.parametrize("mode", ["bytecode", "tiered"])
def test_run_fib(mode):
    if mode != "bytecode" and not vmjit.jit_available:
        pytest.skip("this build has no JIT")
    r = _run("run", str(ROOT / "examples" / "fib.vmasm"), "10",
             "--mode", mode)
    assert (r.returncode, r.stdout) == (0, "55\n"), r.stdout + r.stderr


def test_exit_status_and_errors_are_the_commands():
    r = _run("run", str(ROOT / "examples" / "fib.vmasm"), "--no-such-option")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("vmjit: UsageError: "), r.stderr
    r = _run("run", "/no/such/file.vmasm")
    assert r.returncode != 0 and "vmjit: IOError" in r.stderr, r.stderr


def test_the_executable_is_the_packages():
    exe = command.find_executable()
    assert exe is not None
    package = pathlib.Path(vmjit.__file__).resolve().parent
    # The wheel's own copy, or the build tree's next to build/python.
    assert exe in (package / "bin" / "vmjit",
                   package.parent.parent / "bin" / "vmjit"), exe


def test_without_the_executable(tmp_path, monkeypatch, capsys):
    # A package copied away from its build: no vmjit beside it, and a
    # script named vmjit (pip's, which runs this module) is not taken.
    package = tmp_path / "a" / "lib" / "python3" / "site-packages" / "vmjit"
    for where in (package / "bin", tmp_path / "a" / "bin"):
        where.mkdir(parents=True)
        (where / "vmjit").write_text("#!/bin/sh\nexit 0\n")
        (where / "vmjit").chmod(0o755)
    monkeypatch.setattr(command, "_PACKAGE", package)
    assert command.find_executable() is None
    assert command.main(["--version"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(r"vmjit: the vmjit command is not installed with "
                        r"this package \(looked for .*\): build it with "
                        r"scripts/build\.sh \(build/bin/vmjit\) or install "
                        r"the package with pip, which ships it\n", err), err
    assert str(package / "bin" / "vmjit") in err
