"""Types that hold: ``mypy --strict`` passes on the package, on every
```python block of docs/python.md and on examples/python/*.py, and what the
API returns has a precise type (never Any). Skipped without mypy (Debian:
python3-mypy, which scripts/install-deps.sh installs)."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import vmjit

pytest.importorskip("mypy")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "python.md"
EXAMPLES = sorted((ROOT / "examples" / "python").glob("*.py"))
PACKAGE_PARENT = pathlib.Path(vmjit.__file__).resolve().parents[1]


def _mypy(*args, cwd):
    """mypy --strict on this vmjit package (and examples/scripts for the
    examples' `import reference`); returns the CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_PARENT)
    env["MYPYPATH"] = str(ROOT / "examples" / "scripts")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(cwd / "mypy-cache"), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _python_blocks():
    """(first line, code) of every ```python block of docs/python.md."""
    blocks, lines = [], DOCS.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            indent = len(lines[i]) - len(lines[i].lstrip())
            end = next(j for j in range(i + 1, len(lines))
                       if lines[j].strip() == "```")
            code = "\n".join(line[indent:] for line in lines[i + 1:end])
            blocks.append((i + 2, code + "\n"))
            i = end
        i += 1
    return blocks


def test_package_is_strict(tmp_path):
    r = _mypy("-p", "vmjit", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_docs_and_examples_are_strict(tmp_path):
    blocks = _python_blocks()
    # The quick start, TVM's names, the types, register_func.
    assert len(blocks) >= 4, blocks
    files = []
    for start, code in blocks:
        path = tmp_path / ("python_md_line_%d.py" % start)
        path.write_text(code)
        files.append(str(path))
    assert EXAMPLES, ROOT / "examples" / "python"
    r = _mypy(*files, *map(str, EXAMPLES), cwd=tmp_path)
    # python_md_line_N.py:M is line N + M - 1 of docs/python.md.
    assert r.returncode == 0, r.stdout + r.stderr


def test_types_are_precise(tmp_path):
    """What a program gets back from each name has the type the API
    documents, not Any."""
    (tmp_path / "sample.py").write_text(textwrap.dedent("""\
        import numpy as np
        import vmjit

        exe = vmjit.load("fib.vmasm")
        vm = vmjit.VirtualMachine(exe, vmjit.cpu())
        f = vm["main"]
        reveal_type(exe)
        reveal_type(vm)
        reveal_type(f)
        reveal_type(f(10))
        reveal_type(vmjit.cpu())
        reveal_type(vm.time_evaluator("main", vmjit.cpu()))
        reveal_type(vm.time_evaluator("main")(10).median)
        reveal_type(vm.profile("main", 10))
        reveal_type(vm.profile("main", 10).rows[0])
        reveal_type(vm.get_outputs("main"))
        reveal_type(vmjit.get_global_func("scalar.add"))
        reveal_type(vmjit.get_global_func("no.such", allow_missing=True))
        reveal_type(exe.as_python())
        reveal_type(vmjit.nd.array(np.ones(3)))
        reveal_type(vmjit.tensor([1, 2]).asnumpy())
        reveal_type(vm.profile("main", 10).csv())
        """))
    r = _mypy("sample.py", cwd=tmp_path)
    revealed = [re.sub(r"^sample\.py:\d+: note: Revealed type is ", "", line)
                for line in r.stdout.splitlines()]
    value = revealed[3]
    assert revealed[:3] + revealed[4:] == [
        '"vmjit.executable.Executable"',
        '"vmjit.virtual_machine.VirtualMachine"',
        '"vmjit._vmjit.Function"',
        '"Tuple[builtins.int, builtins.int, fallback=vmjit.values.Device]"',
        # Callable[..., BenchmarkResult]: any arguments, as the function's.
        '"def (*Any, **Any) -> vmjit.virtual_machine.BenchmarkResult"',
        '"builtins.float"',
        '"vmjit.virtual_machine.ProfileReport"',
        '"Tuple[builtins.str, builtins.int, builtins.float, '
        'fallback=vmjit.virtual_machine.ProfileRow]"',
        value,
        '"vmjit._vmjit.Function"',
        '"Union[vmjit._vmjit.Function, None]"',
        '"builtins.str"',
        '"vmjit._vmjit.Tensor"',
        '"numpy.ndarray[Any, numpy.dtype[Any]]"',
        '"builtins.str"',
    ], r.stdout + r.stderr
    # A call returns vmjit.Value: the union of what a program can return.
    for kind in ("None", "builtins.int", "builtins.float", "builtins.str",
                 "builtins.bytes", "vmjit._vmjit.Tensor",
                 "vmjit._vmjit.Function", "vmjit._vmjit.Object",
                 "builtins.tuple["):
        assert kind in value, value
    assert "Any" not in value, value
