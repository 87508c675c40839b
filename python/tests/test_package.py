"""The package as a package: its version, its type stubs and py.typed
(next to the extension, in the build tree as installed), stubs that match
the extension (also by mypy's stubtest, and mypy reads them: Debian's
python3-mypy), and a docstring on every public name."""

import ast
import inspect
import importlib.metadata
import pathlib
import os
import re
import subprocess
import sys
import textwrap
import types
import typing

import pytest

import vmjit
from vmjit import _vmjit

PACKAGE = pathlib.Path(vmjit.__file__).resolve().parent
STUB = PACKAGE / "_vmjit.pyi"

# Names of the extension's classes that are not part of its API.
_CLASS_INTERNALS = {"__doc__", "__module__", "__dict__", "__weakref__",
                    "__repr__", "__vectorcalloffset__"}


def test_version():
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", vmjit.__version__)
    try:
        installed = importlib.metadata.version("vmjit")
    except importlib.metadata.PackageNotFoundError:
        return  # the build tree: no dist-info
    assert installed == vmjit.__version__


def test_typed_package():
    assert (PACKAGE / "py.typed").is_file()
    assert STUB.is_file()


def _stub():
    """The stub's module-level names and, per class, its members; and the
    names of module-level values that have a docstring."""
    tree = ast.parse(STUB.read_text(), str(STUB))
    names, classes, documented = set(), {}, set()
    body = tree.body
    for i, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
            nxt = body[i + 1] if i + 1 < len(body) else None
            if (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                documented.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    members.add(item.target.id)
            classes[node.name] = members
    return names, classes, documented


def _module_names():
    return {n for n in dir(_vmjit)
            if not (n.startswith("__") and n.endswith("__"))}


def test_stub_has_every_name_of_the_extension():
    names, _, _ = _stub()
    assert sorted(_module_names() - names) == []
    assert sorted(names - _module_names()) == []


@pytest.mark.parametrize("cls", sorted(
    n for n in dir(_vmjit) if isinstance(getattr(_vmjit, n), type)))
def test_stub_has_every_member_of_each_class(cls):
    _, classes, _ = _stub()
    assert cls in classes
    runtime = {n for n in vars(getattr(_vmjit, cls))
               if n not in _CLASS_INTERNALS}
    # pybind11 gives every class an __init__ (raising for classes that
    # cannot be made from Python); the stub declares the ones that work.
    if "__init__" in runtime and "__init__" not in classes[cls]:
        with pytest.raises(TypeError):
            getattr(_vmjit, cls)()
        runtime.discard("__init__")
    assert sorted(runtime - classes[cls]) == []
    assert sorted(classes[cls] - runtime) == []


def _pybind11_params(func):
    """The parameters of a pybind11 function, from the signature that
    pybind11 writes as the first line of its docstring: (name, has
    default) pairs, without self. A function written in C with a text
    signature (vmjit.tensor) gives its parameters to inspect."""
    if getattr(func, "__text_signature__", None):
        sig = inspect.signature(func)
        return [(p.name, p.default is not inspect.Parameter.empty)
                for p in sig.parameters.values() if p.name != "self"]
    first = func.__doc__.splitlines()[0]
    match = re.fullmatch(r"\w+\((.*)\) -> .*", first)
    assert match, first
    params, depth, start, text = [], 0, 0, match.group(1)
    for i, c in enumerate(text + ","):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            part = text[start:i].strip()
            start = i + 1
            if part:
                params.append((part.split(":")[0].strip(), "=" in part))
    return [p for p in params if p[0] != "self"]


def _stub_params(node):
    """(name, has default, positional-only) of a stub function, without
    self."""
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    out = [(p.arg, d, i < len(a.posonlyargs))
           for i, (p, d) in enumerate(zip(positional, defaults))]
    out += [(p.arg, d is not None, False) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return [p for p in out if p[0] != "self"]


def _pybind11_functions():
    """(qualified name, runtime function, stub node) of every function and
    method that pybind11 made (they have the signature in the docstring)."""
    tree = ast.parse(STUB.read_text(), str(STUB))
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.append((node.name, getattr(_vmjit, node.name), node))
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_vmjit, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in vars(cls):
                    out.append(("%s.%s" % (node.name, item.name),
                                getattr(cls, item.name), item))
    return [o for o in out if type(o[1]).__name__ in
            ("builtin_function_or_method", "instancemethod")]


def test_stub_signatures_match_pybind11():
    checked = 0
    for name, func, node in _pybind11_functions():
        runtime = _pybind11_params(func)
        stub = _stub_params(node)
        assert len(runtime) == len(stub), (name, runtime, stub)
        for (rname, rdefault), (sname, sdefault, posonly) in zip(runtime, stub):
            unnamed = re.fullmatch(r"arg[0-9]+", rname) is not None
            # A parameter the extension does not name is positional-only.
            assert posonly == unnamed, (name, rname, sname)
            if not unnamed:
                assert sname == rname, (name, rname, sname)
            assert sdefault == rdefault, (name, rname)
        checked += 1
    assert checked >= 20  # the module's functions and Machine's methods


def test_stub_parses_as_python_3_8_syntax():
    ast.parse(STUB.read_text(), str(STUB), feature_version=(3, 8))


def _public_api():
    """(name, object) of every public name of the package and every public
    member of its classes."""
    out = []
    for name in vmjit.__all__:
        obj = getattr(vmjit, name)
        out.append((name, obj))
        if isinstance(obj, type):
            fields = getattr(obj, "_fields", ())
            for member, value in vars(obj).items():
                if member.startswith("_") or member in fields:
                    continue
                if isinstance(value, (types.FunctionType, property,
                                      types.MethodDescriptorType,
                                      types.GetSetDescriptorType,
                                      staticmethod, classmethod)) \
                        or type(value).__name__ == "instancemethod":
                    out.append(("%s.%s" % (name, member), value))
    return out


def _api_params():
    params = []
    for name, obj in _public_api():
        marks = []
        if name == "Object.type_name":
            # Its docstring belongs in python/src/convert.cpp.
            marks = [pytest.mark.xfail(strict=True,
                                       reason="no docstring in the extension")]
        params.append(pytest.param(name, obj, id=name, marks=marks))
    return params


def _alias_comments():
    """The type aliases of the Python layer (``NAME = Union[...]``) that
    a ``#:`` comment documents, as Sphinx reads them."""
    documented = set()
    for source in PACKAGE.glob("*.py"):
        lines = source.read_text().splitlines()
        for i, line in enumerate(lines):
            match = re.match(r"(\w+) = ", line)
            if match and i > 0 and lines[i - 1].startswith("#: "):
                documented.add(match.group(1))
    return documented


@pytest.mark.parametrize("name,obj", _api_params())
def test_public_name_has_a_docstring(name, obj):
    if isinstance(obj, (bool, int, str)):
        # A value has no docstring of its own: the stub gives it one.
        _, _, documented = _stub()
        assert name in documented
        return
    if typing.get_origin(obj) is not None:
        # A type alias (vmjit.Value): documented where it is defined.
        assert name in _alias_comments()
        return
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    doc = obj.__doc__ if not isinstance(obj, type) else vars(obj).get("__doc__")
    assert doc and doc.strip(), name
    # Not the placeholder pybind11 or Python gives an undocumented name.
    assert not re.match(r"\w+\(.*\) -> .*\n?$", doc), (name, doc)


def test_all_is_the_public_api():
    public = {n for n in dir(vmjit) if not n.startswith("_")}
    submodules = {n for n in public
                  if isinstance(getattr(vmjit, n), types.ModuleType)}
    assert sorted(public - set(vmjit.__all__) - submodules) == []


def _mypy(*args, cwd):
    """Runs mypy (skips without it) on this vmjit package; returns the
    CompletedProcess."""
    pytest.importorskip("mypy")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE.parent)
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_mypy_stubtest(tmp_path):
    """The stubs against the extension: names, kinds (method, property,
    final class), and signatures where the runtime has them."""
    allowlist = pathlib.Path(__file__).with_name("stubtest-allowlist.txt")
    r = _mypy("mypy.stubtest", "--mypy-config-file", os.devnull,
              "--allowlist", str(allowlist), "vmjit._vmjit", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_reads_the_stubs(tmp_path):
    """mypy finds the package's types (py.typed) and the package checks;
    a program's types come from the stubs."""
    r = _mypy("mypy", "--cache-dir", str(tmp_path / "cache"), "-p", "vmjit",
              cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    (tmp_path / "sample.py").write_text(textwrap.dedent("""\
        import vmjit
        t = vmjit.empty([2, 3], "float32")
        reveal_type(t)
        reveal_type(t.shape)
        reveal_type(t.numpy())
        reveal_type(vmjit.jit_available)
        reveal_type(vmjit.__version__)
        n: str = t.ndim
        vmjit.tensor()
        """))
    r = _mypy("mypy", "--cache-dir", str(tmp_path / "cache"),
              "--no-error-summary", "sample.py", cwd=tmp_path)
    lines = [line.split(": ", 1)[1] for line in r.stdout.splitlines()
             if line.startswith("sample.py:")]
    # numpy() reveals an ndarray, whose parameters depend on NumPy's version.
    assert len(lines) > 2 and lines[2].startswith(
        'note: Revealed type is "numpy.ndarray['), r.stdout + r.stderr
    del lines[2]
    assert lines == [
        'note: Revealed type is "vmjit._vmjit.Tensor"',
        'note: Revealed type is "builtins.tuple[builtins.int, ...]"',
        'note: Revealed type is "builtins.bool"',
        'note: Revealed type is "builtins.str"',
        'error: Incompatible types in assignment (expression has type "int", '
        'variable has type "str")  [assignment]',
        'error: Too few arguments  [call-arg]',
    ], r.stdout + r.stderr
