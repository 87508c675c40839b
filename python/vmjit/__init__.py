"""vmjit: run register-bytecode model drivers (Apache TVM's Relax VM
programs) with an interpreter and a tier-up JIT.

    import numpy as np, vmjit
    exe = vmjit.load("model.so")          # or .vmasm, vmjit binary, TVM exec
    vm = vmjit.VirtualMachine(exe)        # mode="tiered" by default
    y = vm["main"](np.ones((4, 4), "float32"))
    print(np.from_dlpack(y), vm.stats())

See docs/python.md.
"""

import atexit

from . import _vmjit
from ._version import __version__
from . import errors
from .errors import Error
from .executable import Executable, FunctionInfo, Stats, assemble, load
from .functions import (get_global_func, list_global_func_names,
                        register_func, register_global_func,
                        remove_global_func)
from .tensors import from_dlpack, tensor
from .values import Device, DeviceLike, Shape, Value, cpu, device
from .virtual_machine import (BenchmarkResult, InstrumentReturnKind,
                              ProfileReport, ProfileRow, VirtualMachine)
from . import nd

Tensor = _vmjit.Tensor
Function = _vmjit.Function
Object = _vmjit.Object
empty = _vmjit.empty
jit_available = _vmjit.jit_available
baseline_available = _vmjit.baseline_available

_vmjit._set_hooks(Shape, Device, errors._make)


@atexit.register
def _at_exit() -> None:
    """At interpreter exit, before any C++ static is destroyed: threads
    still inside VM calls (daemon threads) no longer take the GIL (they
    wait for the process to end instead), background tier-2 compiles stop
    (one still running then would run into LLVM's statics), and registered
    Python functions leave the registry (which lives until the process
    ends) while Python can still release them."""
    _vmjit._begin_closing()
    _vmjit._stop_background_compiles()
    _vmjit._clear_python_funcs()

__all__ = [
    "BenchmarkResult", "Device", "DeviceLike", "Error", "Executable",
    "Function", "FunctionInfo", "InstrumentReturnKind", "Object",
    "ProfileReport", "ProfileRow", "Shape", "Stats", "Tensor", "Value",
    "VirtualMachine", "assemble", "baseline_available", "cpu", "device",
    "empty", "errors", "from_dlpack", "get_global_func", "jit_available",
    "list_global_func_names", "load", "nd", "register_func",
    "register_global_func", "remove_global_func", "tensor",
]
