"""Shared fixtures of the vmjit Python tests.

Run them with the vmjit package on the path:

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests

The programs the tests run are files in Inputs/ (load them with
``load_input``). Every test that executes code takes the ``mode`` fixture,
so it runs once per execution mode; a build without the JIT (or without
the baseline tier) runs only the modes it has. ``make_vm`` makes a
VirtualMachine in the test's mode (tiered with tier_threshold=1, so that
functions tier up at once).
"""

import os
import pathlib

import pytest

# The runtime reads these when a VirtualMachine is created; a developer's
# settings must not change what the tests see.
for _var in ("VMJIT_TIER_THRESHOLD", "VMJIT_BASELINE_THRESHOLD",
             "VMJIT_LOG_LEVEL"):
    os.environ.pop(_var, None)

import vmjit  # noqa: E402

INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs"

MODES = ("bytecode", "baseline", "compiled", "tiered")

_NO_JIT = pytest.mark.skipif(not vmjit.jit_available,
                             reason="this build has no JIT")
_NO_BASELINE = pytest.mark.skipif(not vmjit.baseline_available,
                                  reason="this build has no baseline tier")
MODE_PARAMS = [
    pytest.param("bytecode", id="bytecode"),
    pytest.param("baseline", id="baseline", marks=[_NO_JIT, _NO_BASELINE]),
    pytest.param("compiled", id="compiled", marks=_NO_JIT),
    pytest.param("tiered", id="tiered", marks=_NO_JIT),
]


def _input_path(name):
    """The path of Inputs/NAME (NAME without .vmasm is completed)."""
    if not name.endswith(".vmasm"):
        name += ".vmasm"
    path = INPUTS / name
    assert path.is_file(), path
    return path


_executables = {}


def _load_input(name):
    """The Executable of Inputs/NAME.vmasm, loaded once per session (an
    Executable may be shared by any number of VMs)."""
    exe = _executables.get(name)
    if exe is None:
        exe = _executables[name] = vmjit.load(_input_path(name))
    return exe


def _vm_options(mode):
    """The VirtualMachine options of a mode: tiered tiers up at once."""
    return {"tier_threshold": 1} if mode == "tiered" else {}


def _new_vm(program, mode, **kwargs):
    """A VirtualMachine for `program` (an Inputs name or an Executable)."""
    exe = _load_input(program) if isinstance(program, str) else program
    options = _vm_options(mode)
    options.update(kwargs)
    return vmjit.VirtualMachine(exe, mode, **options)


@pytest.fixture(params=MODE_PARAMS)
def mode(request):
    """Each execution mode the build has."""
    return request.param


@pytest.fixture
def make_vm(mode):
    """make_vm(program, **options): a VirtualMachine in the test's mode."""
    def make(program, **kwargs):
        return _new_vm(program, mode, **kwargs)
    return make


@pytest.fixture
def values_vm(make_vm):
    """A VM of Inputs/values.vmasm in the test's mode."""
    return make_vm("values")


@pytest.fixture
def tensors_vm(make_vm):
    """A VM of Inputs/tensors.vmasm in the test's mode."""
    return make_vm("tensors")


@pytest.fixture
def available_modes():
    """The modes this build runs (the ones `mode` does not skip)."""
    if not vmjit.jit_available:
        return ["bytecode"]
    return [m for m in MODES if m != "baseline" or vmjit.baseline_available]


@pytest.fixture
def input_path():
    """input_path(name): the path of Inputs/NAME.vmasm."""
    return _input_path


@pytest.fixture
def load_input():
    """load_input(name): the Executable of Inputs/NAME.vmasm (loaded once
    per session)."""
    return _load_input


@pytest.fixture
def new_vm():
    """new_vm(program, mode, **options): a VirtualMachine in any mode, for
    tests that compare modes within one test."""
    return _new_vm


def _built_file(variable, relative):
    """A file the build makes for the tests: $VARIABLE (CTest sets it: the
    file must then exist), else RELATIVE in the build tree the package was
    imported from (by hand: the test is skipped when it is not there)."""
    path = os.environ.get(variable)
    if path:
        assert os.path.isfile(path), "%s=%s does not exist" % (variable, path)
        return path
    build = pathlib.Path(vmjit.__file__).resolve().parents[2]
    path = build / relative
    if not path.is_file():
        pytest.skip("%s is not built (set %s)" % (relative, variable))
    return str(path)


@pytest.fixture
def demo_kernels():
    """examples/kernel_library's libvmjit_demo_kernels.so."""
    return _built_file("VMJIT_DEMO_KERNELS", "lib/libvmjit_demo_kernels.so")


@pytest.fixture
def tvm_model():
    """The model library laid out as TVM's export_library writes one
    (unittests/tools/tvm-library: the executable of its Inputs/model.vmasm
    with C kernels)."""
    return _built_file("VMJIT_TEST_TVM_MODEL",
                       "unittests/tools/tvm-library/model.so")


@pytest.fixture
def aot_library():
    """A library `vmjit compile` wrote (unittests/vm/Inputs/aot.vmasm),
    built with the JIT only."""
    if not vmjit.jit_available and not os.environ.get("VMJIT_TEST_AOT_LIBRARY"):
        pytest.skip("vmjit compile needs the JIT")
    return _built_file("VMJIT_TEST_AOT_LIBRARY", "unittests/vm/aot_fib.so")


def _child_env():
    """The environment of a child interpreter that imports this same vmjit
    package, writing no bytecode files."""
    env = dict(os.environ)
    package_dir = str(pathlib.Path(vmjit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        [package_dir] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture
def run_python(tmp_path):
    """run_python(script, *args): runs `script` in a new interpreter that
    imports this same vmjit package (for what may crash the process);
    returns the CompletedProcess (text output)."""
    import subprocess
    import sys

    def run(script, *args, timeout=120):
        return subprocess.run([sys.executable, "-c", script] + list(args),
                              cwd=tmp_path, env=_child_env(),
                              capture_output=True, text=True, timeout=timeout)
    return run


@pytest.fixture
def run_script(tmp_path):
    """run_script(path, *args): runs the Python file `path` (an example) in
    a new interpreter that imports this same vmjit package, in a scratch
    directory; returns the CompletedProcess (text output)."""
    import subprocess
    import sys

    def run(path, *args, timeout=300):
        return subprocess.run([sys.executable, str(path)] + list(args),
                              cwd=tmp_path, env=_child_env(),
                              capture_output=True, text=True, timeout=timeout)
    return run


class _DLPackOnly:
    """An array that offers only DLPack (no buffer), as torch or JAX do."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.fixture
def dlpack_only():
    """dlpack_only(array): the array behind DLPack alone, without its
    buffer (as torch or JAX arrays are)."""
    return _DLPackOnly
